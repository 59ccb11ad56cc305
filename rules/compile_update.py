"""NRN415: a torchrl loss module's training step becomes one compiled ``update`` function."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst
import libcst.matchers as m

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.nodes import method_name
from porter.rules._tables.compile import UPDATE_STEP_LOSSES, UPDATE_STEP_TARGET_UPDATERS
from porter.rules.compile_insert import CompileInsert

_TORCH_OPTIMIZER = re.compile(r"^torch\.optim\.(\w+\.)?[A-Z]\w*$")
_CLIP = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm_"})
_NAMES = ("update", "update_step", "train_step")


@dataclass(frozen=True)
class UpdateStep:
    """One training step of a torchrl loss module found in a step loop.

    ``moved`` are the statements of ``block`` that go into the function (the loss call first),
    ``loop`` the outermost step loop of the function (the function is defined before it)."""

    loss: str
    loop: cst.For | cst.While
    block: cst.IndentedBlock
    moved: tuple[cst.SimpleStatementLine, ...]
    params: tuple[str, ...]  # names the step reads that the loop binds: the function's parameters
    extra: tuple[tuple[str, cst.BaseExpression], ...]  # (parameter, expression the caller passes)
    returns: tuple[str, ...]
    name: str


def _single(statement: cst.BaseStatement) -> cst.BaseSmallStatement | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        return statement.body[0]
    return None


def _reads(node: cst.CSTNode) -> set[str]:
    """Names ``node`` reads (every Name that is not an attribute name or a keyword)."""
    found: set[str] = set()
    for name in m.findall(node, m.Name()):
        assert isinstance(name, cst.Name)
        found.add(name.value)
    attrs = {a.attr.value for a in m.findall(node, m.Attribute()) if isinstance(a, cst.Attribute)}
    keywords = {a.keyword.value for a in m.findall(node, m.Arg()) if isinstance(a, cst.Arg) and a.keyword is not None}
    return found - ((attrs | keywords) - _plain_reads(node))


def _plain_reads(node: cst.CSTNode) -> set[str]:
    """Names read where they are not an attribute's or keyword's name (``x`` in ``x.x``)."""
    out: set[str] = set()

    class _V(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            out.add(node.value)

    node.visit(_V())
    return out


def _bound(node: cst.CSTNode) -> set[str]:
    """Names bound anywhere inside ``node`` (assignment and loop targets, ``with ... as``)."""
    found: set[str] = set()
    targets: list[cst.CSTNode] = []
    for n in m.findall(node, m.Assign() | m.AugAssign() | m.AnnAssign() | m.For() | m.WithItem() | m.NamedExpr()):
        if isinstance(n, cst.Assign):
            targets.extend(t.target for t in n.targets)
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
            targets.append(n.target)
        elif isinstance(n, cst.WithItem) and n.asname is not None:
            targets.append(n.asname.name)
    for target in targets:
        found |= {t.value for t in m.findall(target, m.Name()) if isinstance(t, cst.Name)} if not isinstance(target, cst.Name) else {target.value}
    return found


class CompileUpdate(Rule):
    """Compile a torchrl loss module's training step as one ``update`` function.

    What it does:
        In a file with no compile of its own (the same exclusions as NRN411), finds the training
        step of a torchrl loss module in a step loop, all in one block:
        ``out = loss_module(batch)`` (``loss_module`` built by one of the torchrl loss classes of
        ``UPDATE_STEP_LOSSES``, matched by qualified name, in every assignment of it in the function),
        the loss value computed from ``out`` by subscripts and arithmetic (``loss = out["loss_actor"]
        + out["loss_value"]``), ``loss.backward()``, optionally
        ``torch.nn.utils.clip_grad_norm_(loss_module.parameters(), max_norm)``, ``optim.step()`` and
        ``optim.zero_grad()`` of a ``torch.optim`` optimizer built from ``loss_module.parameters()``,
        and optionally the ``step()`` of a ``SoftUpdate(loss_module, ...)`` target updater. It moves
        those statements, unchanged and in their order, into a function defined before the
        function's outermost step loop (``def update(batch): ...; return out, total_norm``),
        compiles it with ``update = torch.compile(update, backend="neuron", dynamic=False)`` and
        calls it where the loss call was (``out, total_norm = update(batch)``). The statements
        between them that are not part of the step (logging: ``tds.append(out.detach())``,
        ``tds[-1].set("grad_norm", total_norm.mean())``) stay where they are, now after the
        call. The function's parameters are the names the step reads that the step loop binds
        (the sampled batch); an argument of ``clip_grad_norm_`` that is neither a name nor a
        literal (``cfg.train.max_grad_norm``) is passed by the caller too, so it is read when it
        was read before. It returns the names the step assigns that are read elsewhere.

    Why:
        torchrl's loss modules call their networks with swapped-in functional parameters
        (tensordict's ``to_module``): compiling the loss module in place (NRN411) recompiles at every
        step on the swapped tensors' guards, so NRN411 declines it (NRN413) and the script ran
        op by op. torchrl's own compiled scripts (``sota-implementations/ddpg``, ``sac``, ``ppo``:
        a ``def update(...)`` holding the loss, ``backward()`` and ``optimizer.step()``, compiled
        with ``torch.compile``/``compile_with_warmup``) compile the whole update instead: the
        parameters are then read once per call at the function's entry. Measured with
        ``porter check`` on torchrl 0.14.1's ``multiagent/iql.py`` (DQNLoss, MultiAgentMLP,
        SoftUpdate) and ``multiagent/qmix_vdn.py`` (QMixerLoss; 2026-12-02): one warm-up recompile
        at step 1, stable after, 6/6 graphs lowered, 0 host syncs per step, parity match/match. ``dynamic=False`` because TorchNeuron
        rejects dynamic shapes (AWS Neuron docs, torch.compile reference).

    Heuristic:
        Only the loss classes listed in ``UPDATE_STEP_LOSSES`` (the measured value-based losses,
        DQNLoss and QMixerLoss); the losses with a probabilistic actor over a ``MultiAgentMLP``
        are left out: compiled this way ``multiagent/sac.py`` (SACLoss) recompiled 13 times after
        warm-up and ``multiagent/mappo_ippo.py`` (ClipPPOLoss) at steps 1 and 2, both at
        ``tensordict/nn/probabilistic.py:1910`` (the guard holds a ``_param_td`` that is rebuilt per
        call). ``DDPGLoss`` is left out too: its ``TanhDelta`` actor raises under compile with its
        default ``safe=True`` whatever the torch version (torchrl 0.14.1
        ``torchrl/modules/distributions/continuous.py:810-811``; ``multiagent/maddpg_iddpg.py``
        crashed so). Statements left in place must not mention the loss module, the optimizer or the
        updater, nor assign a name the moved statements read; otherwise nothing is changed. The
        function is named ``update`` (``update_step`` / ``train_step`` when the file uses that
        name).

    Before:
        loss_module = DQNLoss(qnet, delay_value=True)
        updater = SoftUpdate(loss_module, eps=0.995)
        optim = torch.optim.Adam(loss_module.parameters(), lr)
        for data in collector:
            for _ in range(n):
                batch = buffer.sample()
                out = loss_module(batch)
                out["loss"].backward()
                optim.step()
                optim.zero_grad()
                updater.step()

    After:
        ...
        def update(batch):
            out = loss_module(batch)
            out["loss"].backward()
            optim.step()
            optim.zero_grad()
            updater.step()

        update = torch.compile(update, backend="neuron", dynamic=False)
        for data in collector:
            for _ in range(n):
                batch = buffer.sample()
                update(batch)

    Safety:
        Review: the same statements run in the same order with the same values, but compiled:
        graph breaks (``backward()`` and torch's optimizer ``step`` break the graph; a fused
        optimizer's kernel is not traced) and a step-1 warm-up recompile show up only when the
        script runs (``porter check`` reports them). A statement left in the loop now runs after
        the optimizer step; it reads only the step's outputs (the loss values, computed before
        the step). Edits other rules make to the moved statements are not carried into the
        function (none of the rules edits these statements in the measured scripts). With
        ``--style accelerator`` the backend is left unset; never with ``--no-compile-insertion``.
    """

    code: ClassVar[str] = "NRN415"
    name: ClassVar[str] = "compile-update"
    summary: ClassVar[str] = "a torchrl loss module's step (loss, backward, optimizer step) becomes one compiled update function"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("torchrl",)
    trigger_pattern: ClassVar[str] = r"\.backward\("
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 64

    # NRN411's exclusions, shared: a Hugging Face trainer, a compile or a compile switch of the file's own.
    _excluded = CompileInsert._excluded
    _hf_trainer = CompileInsert._hf_trainer
    _hf_name = CompileInsert._hf_name
    _compiles = CompileInsert._compiles
    _imported = CompileInsert._imported
    _has_switch = CompileInsert._has_switch
    _assigned_switch = CompileInsert._assigned_switch
    _config_switch = CompileInsert._config_switch

    def visit_Module(self, node: cst.Module) -> None:
        if not self.options.insert_compile or self._excluded(node):  # type: ignore[misc, arg-type]
            return
        for step in update_steps(self, node):
            self._rewrite(node, step)

    def _rewrite(self, module: cst.Module, step: UpdateStep) -> None:
        params = [*step.params, *(name for name, _ in step.extra)]
        lines = []
        for statement in step.moved:
            new: cst.CSTNode = statement
            for name, expr in step.extra:
                new = new.deep_replace(expr, cst.Name(name))  # the caller passes it (read when it was)
            lines.append(module.code_for_node(new))
        body = "".join(lines)
        if step.returns:
            body += f"return {', '.join(step.returns)}\n"
        text = f"def {step.name}({', '.join(params)}):\n" + "".join(
            f"    {line}\n" if line.strip() else "\n" for line in body.splitlines()
        )
        function = cst.parse_statement(text)
        assert isinstance(function, cst.FunctionDef)
        function = function.with_changes(leading_lines=(cst.EmptyLine(indent=False),))
        arguments = ([] if self.options.style == "accelerator" else ['backend="neuron"']) + ["dynamic=False"]
        torch = _torch_alias(module)
        compiled = cst.parse_statement(f"{step.name} = {torch}.compile({step.name}, {', '.join(arguments)})\n\n")
        self.insert_before(
            step.loop,
            [function, compiled],
            f"{step.loss}'s training step (loss, backward, optimizer step) moved into {step.name}() and compiled "
            f'as one function: {torch}.compile({step.name}, {", ".join(arguments)}); torchrl\'s own compiled scripts '
            "compile their update the same way (the loss module compiled alone recompiles per step)",
            imports=(ImportSpec("torch"),) if torch == "torch" else (),
        )
        call_args = [*step.params, *(module.code_for_node(expr) for _, expr in step.extra)]
        call = f"{step.name}({', '.join(call_args)})"
        if step.returns:
            call = f"{', '.join(step.returns)} = {call}"
        first = step.moved[0]
        self.replace(
            first,
            lambda updated, _call=call: cst.parse_statement(_call + "\n").with_changes(leading_lines=updated.leading_lines),  # type: ignore[misc, union-attr]
            None,
            drops_calls=True,
        )
        for statement in step.moved[1:]:
            self.remove_statement(statement, None)


def _torch_alias(module: cst.Module) -> str:
    """The name the file imports torch under (``import torch as th``), else ``torch``."""
    for statement in module.body:
        small = _single(statement)
        if isinstance(small, cst.Import):
            for alias in small.names:
                if isinstance(alias.name, cst.Name) and alias.name.value == "torch":
                    if alias.asname is None:
                        return "torch"
                    if isinstance(alias.asname.name, cst.Name):
                        return alias.asname.name.value
    return "torch"


def update_steps(rule: Rule, module: cst.Module) -> list[UpdateStep]:
    """The torchrl training steps of ``module`` that NRN415 compiles as an update function (NRN411
    asks too: it leaves their loss modules to this rule)."""
    used = {n.value for n in m.findall(module, m.Name()) if isinstance(n, cst.Name)}
    found: list[UpdateStep] = []
    taken: set[str] = set()
    for function in m.findall(module, m.FunctionDef()):
        assert isinstance(function, cst.FunctionDef)
        for step in _steps_in(rule, function):
            name = next((n for n in _NAMES if n not in used and n not in taken), None)
            if name is None:
                continue
            taken.add(name)
            found.append(UpdateStep(**{**step.__dict__, "name": name}))
    return found


def _assigned_calls(function: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
    out: dict[str, list[cst.BaseExpression]] = {}
    for assign in m.findall(function, m.Assign()):
        assert isinstance(assign, cst.Assign)
        for target in assign.targets:
            if isinstance(target.target, cst.Name):
                out.setdefault(target.target.value, []).append(assign.value)
    return out


def _strip_to(value: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(value, cst.Call) and method_name(value) in {"to", "cuda", "neuron"} and isinstance(value.func, cst.Attribute):
        value = value.func.value
    return value


def _steps_in(rule: Rule, function: cst.FunctionDef) -> Iterator[UpdateStep]:
    assigned = _assigned_calls(function)

    def built_by(name: str, names: frozenset[str] | None = None, pattern: re.Pattern[str] | None = None) -> list[cst.Call]:
        values = assigned.get(name, [])
        calls = [_strip_to(v) for v in values]
        if not calls or not all(isinstance(c, cst.Call) for c in calls):
            return []
        ok = []
        for c in calls:
            assert isinstance(c, cst.Call)
            qualified = rule.qualified(c.func)
            if names is not None and qualified.isdisjoint(names):
                return []
            if pattern is not None and not any(pattern.match(q) for q in qualified):
                return []
            ok.append(c)
        return ok

    def first_arg_is(call: cst.Call, loss: str, parameters: bool) -> bool:
        if not call.args:
            return False
        value = call.args[0].value
        if parameters:
            return (isinstance(value, cst.Call) and method_name(value) == "parameters" and not value.args
                    and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name) and value.func.value.value == loss)
        return isinstance(value, cst.Name) and value.value == loss

    for loop in m.findall(function, m.For() | m.While()):
        assert isinstance(loop, (cst.For, cst.While))
        if not isinstance(loop.body, cst.IndentedBlock):
            continue
        block = loop.body
        statements = list(block.body)
        for index, statement in enumerate(statements):
            small = _single(statement)
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
                    and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Name)):
                continue
            loss = small.value.func.value
            if not built_by(loss, UPDATE_STEP_LOSSES):
                continue
            optimizers = {n for n in assigned if any(first_arg_is(c, loss, True) for c in built_by(n, pattern=_TORCH_OPTIMIZER))}
            updaters = {n for n in assigned if any(first_arg_is(c, loss, False) for c in built_by(n, UPDATE_STEP_TARGET_UPDATERS))}
            step = _scan(rule, function, loop, block, statements, index, loss, optimizers, updaters)
            if step is not None:
                yield step
            break


def _scan(rule: Rule, function: cst.FunctionDef, loop: cst.For | cst.While, block: cst.IndentedBlock,
          statements: list[cst.BaseStatement], index: int, loss: str, optimizers: set[str],
          updaters: set[str]) -> UpdateStep | None:
    first = statements[index]
    assert isinstance(first, cst.SimpleStatementLine)
    head = first.body[0]
    assert isinstance(head, cst.Assign)
    out = head.targets[0].target
    assert isinstance(out, cst.Name)
    defined = [out.value]
    moved: list[cst.SimpleStatementLine] = [first]
    kept: list[cst.BaseStatement] = []
    extra: list[tuple[str, cst.BaseExpression]] = []
    backward = stepped = zeroed = False
    optimizer: str | None = None
    last = index
    for position in range(index + 1, len(statements)):
        statement = statements[position]
        line = _single(statement)
        call = line.value if isinstance(line, cst.Expr) and isinstance(line.value, cst.Call) else None
        value = line.value if isinstance(line, cst.Assign) else None
        target = line.targets[0].target if isinstance(line, cst.Assign) and len(line.targets) == 1 else None
        receiver = call.func.value if call is not None and isinstance(call.func, cst.Attribute) else None
        receiver_name = receiver.value if isinstance(receiver, cst.Name) else None
        if (call is not None and method_name(call) == "backward" and not backward and receiver is not None
                and _reads(receiver) and _reads(receiver) <= set(defined) and not m.findall(receiver, m.Call())):
            backward = True
        elif (isinstance(target, cst.Name) and value is not None and not backward and _reads(value)
              and _reads(value) <= set(defined) and not m.findall(value, m.Call())):
            defined.append(target.value)  # loss = out["a"] + out["b"]
        elif backward and not stepped and (clip := _clip(rule, line, loss)) is not None:
            clip_call, name = clip
            if name is not None:
                defined.append(name)
            for i, arg in enumerate(clip_call.args[1:], 1):
                if not isinstance(arg.value, (cst.Name, cst.Integer, cst.Float)):
                    param = arg.keyword.value if arg.keyword is not None else ("max_norm", "norm_type")[min(i - 1, 1)]
                    extra.append((param, arg.value))
        elif (call is not None and backward and receiver_name in optimizers and method_name(call) == "step" and not call.args
              and optimizer in (None, receiver_name)):
            stepped, optimizer = True, receiver_name
        elif call is not None and stepped and receiver_name == optimizer and method_name(call) == "zero_grad":
            zeroed = True
        elif call is not None and zeroed and receiver_name in updaters and method_name(call) == "step" and not call.args:
            pass
        else:
            if zeroed:
                break
            kept.append(statement)
            continue
        assert isinstance(statement, cst.SimpleStatementLine)
        moved.append(statement)
        last = position
    if not zeroed:
        return None
    kept = [s for s in kept if statements.index(s) < last]
    forbidden = {loss, *optimizers, *updaters}
    moved_reads = set().union(*(_reads(s) for s in moved))
    for statement in kept:
        if _reads(statement) & forbidden or _bound(statement) & moved_reads:
            return None
        if any(isinstance(c, cst.Call) and method_name(c) == "backward" for c in m.findall(statement, m.Call())):
            return None
    outer = loop
    for ancestor in rule.ancestors(loop):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(ancestor, (cst.For, cst.While)):
            outer = ancestor
    bound_in_loop = _bound(outer) | (_bound(outer.target) if isinstance(outer, cst.For) else set())
    plain = set().union(*(_plain_reads(s) for s in moved))
    reads: list[str] = []
    for statement in moved:
        for read in m.findall(statement, m.Name()):
            assert isinstance(read, cst.Name)
            if read.value in bound_in_loop and read.value in plain and read.value not in defined and read.value not in reads:
                reads.append(read.value)
    reads = [r for r in reads if not _extra_only(r, moved, extra)]
    used_elsewhere: set[str] = set()
    moved_ids = {id(s) for s in moved}
    for node in m.findall(function, m.SimpleStatementLine() | m.BaseCompoundStatement()):
        if id(node) in moved_ids or any(id(a) in moved_ids for a in rule.ancestors(node)):
            continue
        if isinstance(node, cst.SimpleStatementLine):
            used_elsewhere |= _plain_reads(node)
        elif isinstance(node, (cst.If, cst.While)):
            used_elsewhere |= _plain_reads(node.test)
        elif isinstance(node, cst.For):
            used_elsewhere |= _plain_reads(node.iter)
    returns = tuple(name for name in dict.fromkeys(defined) if name in used_elsewhere)
    return UpdateStep(loss, outer, block, tuple(moved), tuple(reads), tuple(extra), returns, "")


def _extra_only(name: str, moved: list[cst.SimpleStatementLine], extra: list[tuple[str, cst.BaseExpression]]) -> bool:
    """``name`` is read only inside an expression the caller passes (``cfg`` of ``cfg.max_norm``)."""
    inside = sum(1 for _, e in extra for n in m.findall(e, m.Name()) if isinstance(n, cst.Name) and n.value == name)
    total = sum(1 for s in moved for n in m.findall(s, m.Name()) if isinstance(n, cst.Name) and n.value == name)
    return inside > 0 and inside == total


def _clip(rule: Rule, small: cst.BaseSmallStatement | None, loss: str) -> tuple[cst.Call, str | None] | None:
    """``[name =] torch.nn.utils.clip_grad_norm_(loss.parameters(), ...)``."""
    name: str | None = None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        name, value = small.targets[0].target.value, small.value
    elif isinstance(small, cst.Expr):
        value = small.value
    else:
        return None
    if not (isinstance(value, cst.Call) and rule.matches(value.func, *_CLIP) and value.args):
        return None
    first = value.args[0].value
    if not (isinstance(first, cst.Call) and method_name(first) == "parameters" and isinstance(first.func, cst.Attribute)
            and isinstance(first.func.value, cst.Name) and first.func.value.value == loss):
        return None
    return value, name
