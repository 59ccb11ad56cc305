"""NRN416: a step counted in a Python int (torchrl's HardUpdate, an optimizer's ``group["step"] += 1``)
called inside a compiled function runs eagerly."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import ClassVar

import libcst as cst
import libcst.matchers as m

from porter.engine.changes import ImportSpec, Safety
from porter.engine.imported import imported_module
from porter.engine.options import Options
from porter.engine.rule import Rule
from porter.rules._lib.imports import import_binding, project_function, top_level, torch_alias
from porter.rules._lib.nodes import dotted
from porter.rules._tables.compile import COUNTING_TARGET_UPDATERS


class EagerTargetUpdater(Rule):
    """Run a ``step()`` that counts in a Python int eagerly when a compiled function calls it.

    What it does:
        In a function the file compiles (``update = torch.compile(update, ...)`` in the scope
        that defines it, or ``@torch.compile``), rewrites ``updater.step()`` to
        ``torch.compiler.disable(updater.step)()`` when ``updater`` holds a torchrl ``HardUpdate``
        (``COUNTING_TARGET_UPDATERS``, matched by qualified name) or an optimizer of the project
        that counts its steps in a Python int: a class of this file or of a project module
        (``Options.imports``, which lists the modules a helper module imports too) deriving from
        ``torch.optim.Optimizer`` whose own ``step`` does ``group["step"] += 1`` or
        ``state["step"] += 1`` on an entry it starts from an int wherever it sets one (a LAMB or Lion
        copied into the repository; NRN417, under a review marker; one started as
        ``torch.tensor(0.0)`` counts in a tensor and is left). A compile with ``fullgraph`` is left:
        a disabled call is an error in a full graph. A name that holds such
        an object on one path and a torch optimizer on another (``Lamb(...)`` if the config says
        so, else ``torch.optim.Adam(...)``) counts too: disabling a torch optimizer's step only
        runs it eagerly, the same arithmetic. What the name holds is read
        where the compiled function finds it, in an enclosing function or the module, from every
        assignment of it there: ``updater = HardUpdate(...)``, or a call of a function that
        returns one: ``loss, updater = make_loss(cfg)`` with ``make_loss`` defined at the top
        level of this file or of a project module the file imports (``from utils import
        make_loss``; read through ``Options.imports``), every ``return`` of it giving, at that
        position, a name that function assigns only from ``HardUpdate(...)``. A name with any other
        binding there (a loop target, a parameter, another value) is left alone.

    Why:
        ``HardUpdate`` counts its steps in a Python int and copies the weights when the count
        reaches the interval (torchrl/objectives/utils.py, ``if self.counter ==
        self.value_network_update_interval``). Traced by Dynamo, the count becomes a guard: the
        compiled function recompiles at every step until Dynamo's cache limit (8), then runs that
        part eagerly anyway. On Neuron each recompile is a neuronx-cc compile. A function wrapped
        by ``torch.compiler.disable`` is called eagerly from compiled code (a graph break at the
        call), so the counter is never guarded on. The step copies parameters once per interval;
        eagerly it does the same copies. An optimizer whose step adds 1 to ``group["step"]``, a
        Python int read in its bias corrections (``beta1 ** group["step"]``), recompiles the same
        way at every step (torchrl 0.14.1's decision_transformer/lamb.py:109-112 under online_dt's
        compiled update); torch's own optimizers keep ``step`` in a tensor for this reason.

    Before:
        loss_module, target_net_updater = make_discrete_loss(cfg.loss, model)

        def update(batch):
            loss = loss_module(batch)["loss"]
            loss.backward()
            optimizer.step()
            target_net_updater.step()
            return loss.detach()

        update = torch.compile(update, backend="neuron")

    After:
        def update(batch):
            ...
            torch.compiler.disable(target_net_updater.step)()
            return loss.detach()

    Safety:
        NRN416 (HardUpdate) is safe: the same calls in the same order with the same values; only
        where Dynamo traces changes. NRN417 (an optimizer) is a review change with a marker: the same
        operations run eagerly, unfused, and may round differently in the last bits from the graph
        they were compiled into. The heuristic for what a name holds is above; a function is compiled when this
        file passes it by name to ``torch.compile`` in the scope that defines it (or decorates it).
        ``SoftUpdate`` is left traced (tensor arithmetic only, no Python counter). An optimizer
        step run eagerly is the same arithmetic as traced, op by op (no fused kernels): on Neuron
        slower than a compiled step, not one compile per step.
    """

    code: ClassVar[str] = "NRN416"
    name: ClassVar[str] = "compile-target-updater"
    summary: ClassVar[str] = "HardUpdate.step() in a compiled function -> torch.compiler.disable(updater.step)()"
    safety: ClassVar[Safety] = Safety.SAFE
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN417": "an optimizer of the project counting its steps in a Python int, stepped in a compiled function: "
                  "its step() runs eagerly (review marker)",
    }
    triggers: ClassVar[tuple[str, ...]] = (".step()",)
    trigger_pattern: ClassVar[str] = r"compile"
    order: ClassVar[int] = 100

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if node.args or not (isinstance(func, cst.Attribute) and func.attr.value == "step" and isinstance(func.value, cst.Name)):
            return
        holder = func.value.value
        function = next((a for a in self.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)
        if not isinstance(function, cst.FunctionDef) or not self._compiled(function) or _binds(function, holder):
            return
        counter = self._holds_counter(function, holder)
        if counter is None:
            return
        bound = torch_alias(self.context.module)  # `import torch.nn` binds torch too
        torch = bound or "torch"
        # HardUpdate's step copies tensors (exact either way); an optimizer's arithmetic run eagerly may
        # round differently from the fused graph it was part of: a review change (NRN417)
        code = "NRN416" if counter == "HardUpdate" else "NRN417"
        how = "its steps" if counter == "HardUpdate" else 'its steps (`group["step"] += 1`)'
        self.replace(
            node,
            lambda updated: cst.Call(
                func=cst.Call(func=cst.parse_expression(f"{torch}.compiler.disable"), args=[cst.Arg(updated.func)])  # type: ignore[attr-defined]
            ),
            f"{holder}.step() -> {torch}.compiler.disable({holder}.step)(): {counter} counts {how} in a Python int, "
            "which compiled code guards on and recompiles for at every step",
            code=code,
            imports=() if bound else (ImportSpec("torch"),),
        )
        if code == "NRN417":
            self.mark(node, f"{counter}.step() runs eagerly (op by op) so its Python step count is no guard: the same "
                      "operations, unfused; to compile it, keep the count in a tensor as torch.optim does", code=code)

    # -- is the function compiled? ---------------------------------------------------------------------
    def _compiled(self, function: cst.FunctionDef) -> bool:
        """The file compiles ``function`` (decorator, or ``torch.compile(function, ...)`` in the scope
        that defines it), and no such compile asks for ``fullgraph``: a call to a disabled function
        is an error in a full graph (Dynamo: "Attempted to call function marked as skipped")."""
        calls: list[cst.CSTNode] = []
        for d in function.decorators:
            if self._is_compile(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator):
                calls.append(d.decorator)
        scope = self._scope_of(function)
        for statement in _own_statements(_body(scope)):
            for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
                if (
                    isinstance(value, cst.Call)
                    and self._is_compile(value.func)
                    and value.args
                    and value.args[0].keyword is None
                    and isinstance(value.args[0].value, cst.Name)
                    and value.args[0].value.value == function.name.value
                ):
                    calls.append(value)
        return bool(calls) and not any(_full_graph(call) for call in calls)

    def _is_compile(self, func: cst.BaseExpression) -> bool:
        return self.matches(func, "torch.compile")

    def _scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        return next((a for a in self.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.ClassDef))), self.context.module)

    # -- what the name holds -----------------------------------------------------------------------------
    def _holds_counter(self, function: cst.FunctionDef, name: str) -> str | None:
        """What counting object ``name``, free in ``function``, holds where ``function`` finds it (its
        class's name), or None. A name assigned from a counting class on one path and a torch
        optimizer on another (``Lamb(...)`` or ``torch.optim.Adam(...)``) counts: disabling a torch
        optimizer's step only runs it eagerly."""
        scope: cst.CSTNode = function
        while not isinstance(scope, cst.Module):
            scope = self._scope_of(scope)
            if isinstance(scope, cst.ClassDef):
                continue  # a class body's names are not seen by the methods in it
            values = _assigned(scope, name)
            if values is None:
                return None  # bound there some other way
            if values:
                return _one_counter([self._makes_counter(target, value) for target, value in values])
        return None

    def _makes_counter(self, target: int | None, value: cst.BaseExpression) -> str | None:
        if not isinstance(value, cst.Call):
            return None
        if target is None:
            made = self._counting_class(value.func)
            if made is not None:
                return made
        return self._returns_counter(value.func, target)

    def _counting_class(self, func: cst.BaseExpression) -> str | None:
        """``func`` (a callee of this file) is a counting class: HardUpdate, a class of this file or
        of a project module it imports that counts its optimizer steps, or a torch optimizer (EAGER)."""
        if self.matches(func, *COUNTING_TARGET_UPDATERS):
            return "HardUpdate"
        if isinstance(func, cst.Name) and import_binding(self.context.module, func.value) is None:
            return _counting_class_of(self.context.module, func.value)
        for qualified in self.qualified(func):
            if qualified.startswith(_TORCH_OPTIM) and not qualified.startswith(_TORCH_SCHEDULERS):
                return EAGER
            module, _, name = qualified.rpartition(".")
            if module and not module.startswith(("torch", "torchrl")) and self.options.imports:
                made = _project_counting_class(self.options, module, name)
                if made is not None:
                    return made
        return None

    def _returns_counter(self, func: cst.BaseExpression, position: int | None) -> str | None:
        """``func`` is a top-level function of this file or of a project module whose every return
        gives a counting object (at ``position`` of a returned tuple): its class's name."""
        found = project_function(self, func)
        if found is None:
            return None
        tree, defined = found
        check = self._counting_class if tree is None else partial(_counts_in, self.options, tree)
        return _function_returns_counter(defined, position, check)


def _full_graph(call: cst.CSTNode) -> bool:
    """A compile call (or decorator) passing ``fullgraph`` other than a literal False."""
    args = call.args if isinstance(call, cst.Call) else ()
    return any(arg.keyword is not None and arg.keyword.value == "fullgraph"
               and not (isinstance(arg.value, cst.Name) and arg.value.value == "False") for arg in args)


# A torch optimizer: disabled, its step() runs eagerly, the same arithmetic (not a counter itself).
EAGER = "eager"
_TORCH_OPTIM = "torch.optim."
_TORCH_SCHEDULERS = "torch.optim.lr_scheduler."


def _one_counter(found: Sequence[str | None]) -> str | None:
    """Every value counts or runs eagerly anyway, and at least one counts: the counting class."""
    if not found or any(label is None for label in found):
        return None
    counting = [label for label in found if label != EAGER]
    return counting[0] if counting else None


def _body(scope: cst.CSTNode) -> tuple[cst.BaseStatement, ...]:
    if isinstance(scope, cst.Module):
        return tuple(scope.body)
    body = getattr(scope, "body", None)
    return tuple(body.body) if isinstance(body, cst.IndentedBlock) else ()


def _own_statements(body: tuple[cst.BaseStatement, ...]) -> Iterator[cst.BaseStatement]:
    """The statements of a scope, into its compound statements, not into nested functions or classes."""
    for statement in body:
        yield statement
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        for part in _blocks(statement):
            yield from _own_statements(part)


def _blocks(statement: cst.BaseStatement) -> Iterator[tuple[cst.BaseStatement, ...]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(statement, field, None)
        if isinstance(block, (cst.Else, cst.Finally, cst.If)):
            if isinstance(block, cst.If):
                yield (block,)
                continue
            block = block.body
        if isinstance(block, cst.IndentedBlock):
            yield tuple(block.body)
    for handler in getattr(statement, "handlers", ()):
        if isinstance(handler.body, cst.IndentedBlock):
            yield tuple(handler.body.body)


def _binds(function: cst.FunctionDef, name: str) -> bool:
    """``name`` is a parameter of ``function`` or bound in its own body (then it is local)."""
    return _assigned(function, name) != []


def _assigned(scope: cst.CSTNode, name: str) -> list[tuple[int | None, cst.BaseExpression]] | None:
    """Every plain assignment of ``name`` in ``scope``'s own statements, as (position in a tuple
    target or None, value); None when the scope binds it any other way (a loop, ``with``, an
    augmented assignment, ``global``, an import, a nested def of that name, a parameter)."""
    found: list[tuple[int | None, cst.BaseExpression]] = []
    if isinstance(scope, cst.FunctionDef):
        params = scope.params
        if any(p.name.value == name for p in (*params.posonly_params, *params.params, *params.kwonly_params)):
            return None
    for statement in _own_statements(_body(scope)):
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            if statement.name.value == name:
                return None
            continue
        if isinstance(statement, (cst.For, cst.With)) and name in _names(statement.target if isinstance(statement, cst.For) else statement.items):
            return None
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    spot = _position(target.target, name)
                    if spot == -1:
                        return None
                    if spot is not None:
                        found.append((None if spot == -2 else spot, small.value))
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)) and name in _names(small.target):
                return None
            elif isinstance(small, (cst.Global, cst.Nonlocal)) and any(n.name.value == name for n in small.names):
                return None
            elif isinstance(small, (cst.Import, cst.ImportFrom)) and name in _names(small):
                return None
    return found


def _position(target: cst.BaseExpression, name: str) -> int | None:
    """-2: the target is ``name``; k: ``name`` is element k of a flat tuple target; None: not
    bound by it; -1: bound some other way (starred, nested, attribute of it)."""
    if isinstance(target, cst.Name):
        return -2 if target.value == name else None
    if isinstance(target, (cst.Tuple, cst.List)):
        for index, element in enumerate(target.elements):
            if isinstance(element.value, cst.Name) and not isinstance(element, cst.StarredElement):
                if element.value.value == name:
                    return index
            elif name in _names(element.value):
                return -1
        return None
    return None


def _names(node: cst.CSTNode | Sequence[cst.CSTNode]) -> set[str]:
    """Every Name under ``node`` (or under each node of a sequence)."""
    nodes = [node] if isinstance(node, cst.CSTNode) else list(node)
    return {n.value for inner in nodes for n in m.findall(inner, m.Name()) if isinstance(n, cst.Name)}


def _function_returns_counter(function: cst.FunctionDef, position: int | None,
                              check: Callable[[cst.BaseExpression], str | None]) -> str | None:
    """Every ``return`` of ``function`` gives (at ``position`` of a returned tuple) a name the
    function assigns only from calls whose callees ``check`` labels (see ``_one_counter``)."""
    returns = [small for statement in _own_statements(_body(function)) if isinstance(statement, cst.SimpleStatementLine)
               for small in statement.body if isinstance(small, cst.Return)]
    if not returns:
        return None
    labels: list[str | None] = []
    for ret in returns:
        value = ret.value
        if position is not None:
            if not isinstance(value, cst.Tuple) or position >= len(value.elements) or isinstance(value.elements[position], cst.StarredElement):
                return None
            value = value.elements[position].value
        if isinstance(value, cst.Call):
            labels.append(check(value.func))
            continue
        if not isinstance(value, cst.Name):
            return None
        assigned = _assigned(function, value.value)
        if not assigned or any(spot is not None or not isinstance(made, cst.Call) for spot, made in assigned):
            return None
        labels.extend(check(made.func) for _spot, made in assigned if isinstance(made, cst.Call))
    return _one_counter(labels)


def _counts_in(options: Options, module: cst.Module, callee: cst.BaseExpression) -> str | None:
    """``callee``, a name or dotted chain of ``module`` (another file), read through that module's
    top-level imports: a counting class's name, EAGER for a torch optimizer, else None."""
    text = dotted(callee)
    if text is None:
        return None
    qualified = _qualified_in(module, text)
    if qualified is None:
        return _counting_class_of(module, text) if "." not in text else None
    if qualified in COUNTING_TARGET_UPDATERS:
        return "HardUpdate"
    if qualified.startswith(_TORCH_OPTIM) and not qualified.startswith(_TORCH_SCHEDULERS):
        return EAGER
    owner, _, name = qualified.rpartition(".")
    return _project_counting_class(options, owner, name) if owner and not owner.startswith(("torch", "torchrl")) else None


def _project_counting_class(options: Options, module: str, name: str) -> str | None:
    """Class ``name`` of project module ``module`` (as the importing file spells it; listed in
    ``Options.imports``) counts its optimizer steps: its name, else None."""
    tree = imported_module(options, module, defining=name)
    return _counting_class_of(tree, name) if tree is not None else None


def _counting_class_of(module: cst.Module, name: str) -> str | None:
    """``name`` when it is a top-level class of ``module`` that counts its optimizer steps."""
    found = top_level(module, name)
    return name if isinstance(found, cst.ClassDef) and _counts_optimizer_steps(module, found) else None


def _counts_optimizer_steps(module: cst.Module, cls: cst.ClassDef) -> bool:
    """A ``torch.optim.Optimizer`` subclass (a base read through ``module``'s imports) whose own
    ``step`` adds an int to a ``"step"`` entry (``group["step"] += 1`` / ``state["step"] += 1``) that
    the class starts from an int wherever it sets one (``= 1``, ``setdefault("step", 0)``)."""
    if not any(_names_optimizer(module, base.value) for base in cls.bases):
        return False
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    step = next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "step"), None)
    if step is None:
        return False
    counts = any(_step_entry(node.target) for node in m.findall(step, m.AugAssign(operator=m.AddAssign(), value=m.Integer()))
                 if isinstance(node, cst.AugAssign))
    # the entry must start as an int: `state["step"] = torch.tensor(0.0)` counts in a tensor (no guard)
    starts = [node.value for node in m.findall(cls, m.Assign()) if isinstance(node, cst.Assign)
              and any(_step_entry(target.target) for target in node.targets)]
    starts += [node.args[1].value for node in m.findall(cls, m.Call(func=m.Attribute(attr=m.Name("setdefault"))))
               if isinstance(node, cst.Call) and len(node.args) == 2 and isinstance(node.args[0].value, cst.SimpleString)
               and node.args[0].value.evaluated_value == "step"]
    return counts and all(isinstance(value, cst.Integer) for value in starts)


def _step_entry(target: cst.BaseExpression) -> bool:
    """``X["step"]``."""
    if isinstance(target, cst.Subscript) and len(target.slice) == 1:
        key = target.slice[0].slice
        return isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString) and key.value.evaluated_value == "step"
    return False


def _names_optimizer(module: cst.Module, base: cst.BaseExpression) -> bool:
    text = dotted(base)
    return text is not None and _qualified_in(module, text) in _OPTIMIZER_BASES


def _qualified_in(module: cst.Module, text: str) -> str | None:
    """The qualified name of dotted ``text`` read through ``module``'s top-level imports (None: its
    head is not imported there)."""
    head, _, rest = text.partition(".")
    binding = import_binding(module, head)
    if binding is None:
        return None
    source, obj, asname = binding
    # from a import B -> a.B; import a.b as m -> a.b; import a.b -> a (it binds the head)
    base = f"{source}.{obj}" if obj else source if asname else head
    return f"{base}.{rest}" if rest else base


_OPTIMIZER_BASES = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})
