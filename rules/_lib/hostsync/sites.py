"""Sync sites: every host synchronisation on the per-step path of a step loop, sorted by what
the rules do with it (accumulate on device, move under the interval, mark).

A statement is *per-step* when a step loop of the same function encloses it and no enclosing
``if`` between them is an interval branch (``%``, or ``==`` against a non-string) or a one-shot
branch (its body ends in ``break``/``return``/``raise``/``sys.exit``). Calls a per-step statement
makes to a function or method of this file (also one nested in the loop's function) are followed
one level deep: a log there moves under the interval when the loop passes its counter in
(``train(epoch)``), a ``return`` of a sync the loop then tests (``losses.append(train(epoch))``,
``if losses[-1] < best``) feeds control flow, any other sync is a residual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from porter.rules._lib.hostsync.model import (
    ACCUMULATE,
    APPEND,
    CONTROL,
    LOG,
    RESIDUAL,
    SYNCHRONIZE,
    TENSOR_NAME,
    Site,
    StepLoop,
)
from porter.rules._lib.hostsync.scope import FileScope
from porter.rules._lib.hostsync.syntax import (
    before_raise,
    ends_loop_or_function,
    formatted_tensors,
    is_interval_test,
    iter_nodes,
    skips_off_interval,
    sync_calls,
)
from porter.rules._lib.nodes import dotted, method_name

# Tensor factories that build on the CPU unless given device= (reading their values is no device sync).
_HOST_FACTORIES = (
    "torch.randint", "torch.rand", "torch.randn", "torch.randperm", "torch.arange", "torch.zeros", "torch.ones",
    "torch.tensor", "torch.empty", "torch.full", "torch.linspace", "torch.as_tensor", "torch.from_numpy",
)
# A test that turns on the user's own timing (the sync under it is what they asked for).
_PROFILING_FLAG = re.compile(r"(?i)profil|timing|timer|benchmark")


@dataclass(frozen=True)
class _Call:
    """A call a per-step statement makes to a function of this file."""

    callee: cst.FunctionDef
    node: cst.Call
    statement: cst.CSTNode  # the calling statement in the loop


class SiteCollector:
    def __init__(self, scope: FileScope, loops: list[StepLoop]) -> None:
        self.scope = scope
        self.index = scope.index
        self.loops = loops
        self.by_node = {id(loop.node): loop for loop in loops}
        self.sites: list[Site] = []
        self.followed: set[int] = set()
        # the source text read once (``module.code`` generates the whole file again at each read)
        self.default_device = "set_default_device" in scope.rule.context.text
        # function -> name -> the values assigned to that plain name in it (a long training loop is walked once)
        self.assigned: dict[int, tuple[cst.CSTNode, dict[str, list[cst.BaseExpression]]]] = {}

    def collect(self) -> list[Site]:
        for step_loop in self.loops:
            # Only the outermost step loop of a nest collects sites; nested loops are visited within.
            if any(id(a) in self.by_node for a in self._loop_ancestors(step_loop.node)):
                continue
            self._collect(step_loop.node.body, step_loop)
        return self.sites

    def _loop_ancestors(self, node: cst.CSTNode):
        current = self.scope.parent(node)
        while current is not None and not isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            if isinstance(current, (cst.For, cst.While)):
                yield current
            current = self.scope.parent(current)

    def _collect(self, body: cst.BaseSuite, step_loop: StepLoop) -> None:
        statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
        for statement in statements:
            self._collect_statement(statement, step_loop)
            if skips_off_interval(self.index, statement):
                return  # what follows runs only on interval steps

    def _collect_statement(self, statement: cst.CSTNode, step_loop: StepLoop) -> None:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            line = statement if isinstance(statement, cst.SimpleStatementLine) else None
            for small in statement.body:
                self._classify(small, line, step_loop)
            moved = any(site.statement is statement and site.kind in {LOG, SYNCHRONIZE} for site in self.sites)
            if not moved:  # a logging helper moved under the interval no longer runs every step
                self._follow_calls(statement, step_loop)
            return
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return
        rule = self.scope.rule
        if isinstance(statement, cst.If):
            self._classify_test(statement.test, statement, step_loop)
            # The body of an interval branch (`if step % N == 0`) or a one-shot branch is not per-step.
            if not is_interval_test(self.index, statement.test) and not ends_loop_or_function(statement.body, rule):
                self._collect(statement.body, step_loop)
            orelse = statement.orelse
            if isinstance(orelse, cst.If):
                self._collect_statement(orelse, step_loop)
            elif isinstance(orelse, cst.Else) and not ends_loop_or_function(orelse.body, rule):
                self._collect(orelse.body, step_loop)
            return
        if isinstance(statement, (cst.For, cst.While)):
            inner = self.by_node.get(id(statement), step_loop)
            if isinstance(statement, cst.While):
                self._classify_test(statement.test, statement, step_loop)
            self._collect(statement.body, inner)
            return
        if isinstance(statement, (cst.With, cst.Try)):
            self._collect(statement.body, step_loop)

    # -- helpers the loop calls every step (one level deep) ---------------------------------
    def _follow_calls(self, statement: cst.CSTNode, step_loop: StepLoop) -> None:
        """Syncs inside a function or method of this file that a per-step statement calls.

        ``metric_logger.update(loss=l)`` with ``metric_logger = MetricLogger()`` and a local
        ``MetricLogger.update`` doing ``v.item()``: that ``.item()`` runs every step too.
        """
        for node in iter_nodes(self.index, statement):
            if not isinstance(node, cst.Call):
                continue
            callee = self._resolve(node, step_loop)
            if callee is None or id(callee) in self.followed:
                continue
            self.followed.add(id(callee))
            self._collect_callee(callee.body, step_loop, _Call(callee, node, statement))

    def _collect_callee(self, body: cst.BaseSuite, step_loop: StepLoop, call: _Call) -> None:
        statements = list(body.body) if isinstance(body, cst.IndentedBlock) else [body]
        for position, statement in enumerate(statements):
            self._collect_callee_statement(statement, step_loop, call)
            if skips_off_interval(self.index, statement):
                return  # ``if not should_log: return``: the rest runs only on interval steps
            if before_raise(statement, statements[position + 1:]):
                return  # ``if finite: return`` then a raise: the rest is the error path

    def _collect_callee_statement(self, statement: cst.CSTNode, step_loop: StepLoop, call: _Call) -> None:
        name = call.callee.name.value
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                syncs = [c for c in sync_calls(self.index, small, set()) if not self._on_host(c, call.callee)]
                if not syncs:
                    continue
                counter = self._callee_counter(call, step_loop)
                log = small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None
                if log is not None and len(statement.body) == 1 and counter is not None and self.scope.is_log_call(log):
                    self.sites.append(Site(LOG, statement, small, step_loop, syncs=syncs, counter=counter))
                    continue
                test = self._returned_into_test(small, call, step_loop)
                if test is not None:
                    self.sites.append(Site(CONTROL, statement, small, step_loop, syncs=syncs, note=self.scope.code(test)))
                    continue
                note = f"in {name}(), called {step_loop.every}"
                self.sites.append(Site(RESIDUAL, statement, small, step_loop, syncs=syncs, note=note))
        elif isinstance(statement, cst.If):
            # A test of a tensor's values in a helper the loop calls syncs every step too
            # (``if torch.isfinite(t).all(): return``); only calls say so here: the helper's
            # parameters are not known to be tensors.
            found = self._control_syncs(statement.test, set())
            if found:
                self.sites.append(Site(CONTROL, statement, statement.test, step_loop, syncs=found))
            if not is_interval_test(self.index, statement.test) and not ends_loop_or_function(statement.body, self.scope.rule):
                self._collect_callee(statement.body, step_loop, call)
            if isinstance(statement.orelse, cst.If):
                self._collect_callee_statement(statement.orelse, step_loop, call)
            elif isinstance(statement.orelse, cst.Else):
                self._collect_callee(statement.orelse.body, step_loop, call)
        elif isinstance(statement, (cst.For, cst.While, cst.With, cst.Try)):
            self._collect_callee(statement.body, step_loop, call)

    def _callee_counter(self, call: _Call, step_loop: StepLoop) -> str | None:
        """The loop's step counter inside a function it calls: the parameter it is passed as
        (``train(epoch)`` with ``def train(epoch)``), when the interval is visible there too (a
        module constant, or a closure of the loop's function). None: the log cannot move there."""
        counter, interval = step_loop.counter, step_loop.interval
        if counter is None or interval is None or step_loop.needs_enumerate:
            return None
        params = [p.name.value for p in call.callee.params.params]
        if "self" in params[:1] and isinstance(call.node.func, cst.Attribute):
            params = params[1:]
        found = None
        for position, arg in enumerate(call.node.args):
            if dotted(arg.value) != counter or arg.star:
                continue
            if arg.keyword is not None and arg.keyword.value in params:
                found = arg.keyword.value
            elif arg.keyword is None and position < len(params):
                found = params[position]
        if found is None:
            return None
        root = interval.split(".")[0]
        nested = step_loop.function is not None and self.scope.function_of(call.callee) is step_loop.function
        module_level = any(dotted(t.target) == root for s in self.scope.module.body if isinstance(s, cst.SimpleStatementLine)
                           for a in s.body if isinstance(a, cst.Assign) for t in a.targets)
        if step_loop.uses_constant or nested or module_level or root in params:
            return found
        return None

    def _returned_into_test(self, small: cst.BaseSmallStatement, call: _Call, step_loop: StepLoop) -> cst.BaseExpression | None:
        """``return loss_val.item()`` into ``losses.append(train(epoch))`` / ``v = train(epoch)``,
        and the loop tests that name (``if losses[-1] < best``): the sync decides control flow."""
        if not isinstance(small, cst.Return) or not isinstance(call.statement, cst.SimpleStatementLine):
            return None
        names: set[str] = set()
        for outer in call.statement.body:
            if isinstance(outer, cst.Assign) and outer.value is call.node:
                names |= {t.target.value for t in outer.targets if isinstance(t.target, cst.Name)}
            if isinstance(outer, cst.Expr) and isinstance(outer.value, cst.Call) and method_name(outer.value) == "append":
                receiver = outer.value.func.value  # type: ignore[attr-defined]
                if isinstance(receiver, cst.Name) and any(a.value is call.node for a in outer.value.args):
                    names.add(receiver.value)
        for node in iter_nodes(self.index, step_loop.node.body):
            if isinstance(node, (cst.If, cst.While, cst.Assert)):
                if any(isinstance(n, cst.Name) and n.value in names for n in iter_nodes(self.index, node.test)):
                    return node.test
        return None

    def _resolve(self, call: cst.Call, step_loop: StepLoop) -> cst.FunctionDef | None:
        """The function or method of this file a call runs: ``f()``, ``self.m()``, ``obj.m()``."""
        scope, func = self.scope, call.func
        if isinstance(func, cst.Name):
            if func.value in scope.functions:
                return scope.functions[func.value]
            if step_loop.function is None:
                return None
            # def train(epoch) nested in the function that runs the loop
            nested = [
                n for n in iter_nodes(self.index, step_loop.function)
                if isinstance(n, cst.FunctionDef) and n is not step_loop.function and n.name.value == func.value
            ]
            return nested[0] if len(nested) == 1 else None
        if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
            return None
        receiver, method = func.value.value, func.attr.value
        if receiver == "self":
            cls = scope.class_of(step_loop.node)
            return scope.methods.get((cls, method)) if cls else None
        if step_loop.function is None:
            return None
        for node in iter_nodes(self.index, step_loop.function):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                if node.targets[0].target.value == receiver and isinstance(node.value, cst.Call):
                    cls = dotted(node.value.func)
                    if cls and (cls.split(".")[-1], method) in scope.methods:
                        return scope.methods[(cls.split(".")[-1], method)]
        return None

    # -- what a statement is ---------------------------------------------------------
    def tensors(self, step_loop: StepLoop) -> set[str]:
        """Names known to hold tensors in the loop's function (receivers of ``.backward()``...)."""
        if step_loop.tensors is not None:
            return step_loop.tensors
        root: cst.CSTNode = step_loop.function if step_loop.function is not None else step_loop.node
        names: set[str] = set()
        for node in iter_nodes(self.index, root):
            if isinstance(node, cst.Call) and method_name(node) in {"backward", "item", "detach", "tolist"}:
                receiver = node.func.value  # type: ignore[attr-defined]
                if isinstance(receiver, cst.Name):
                    names.add(receiver.value)
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Name) and TENSOR_NAME.search(target.value):
                    if not sync_calls(self.index, node.value, set()) and isinstance(
                        node.value, (cst.Call, cst.Attribute, cst.BinaryOperation, cst.Subscript)
                    ):
                        names.add(target.value)
        # Names that only ever hold host numbers are not tensors.
        for node in iter_nodes(self.index, root):
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Name) and target.value in names:
                    if isinstance(node.value, (cst.Float, cst.Integer)) or sync_calls(self.index, node.value, set()):
                        names.discard(target.value)
        step_loop.tensors = names
        return names

    def _control_syncs(self, test: cst.BaseExpression, tensors: set[str]) -> list[cst.CSTNode]:
        """Syncs a truth test makes: ``.item()``, ``bool(t)``, ``if loss < best``, ``torch.isnan(loss)``."""
        syncs = sync_calls(self.index, test, tensors)
        nodes = list(iter_nodes(self.index, test))
        implicit: list[cst.CSTNode] = [n for n in nodes if isinstance(n, cst.Name) and n.value in tensors and self._bool_use(n, test)]
        calls: list[cst.CSTNode] = [
            n
            for n in nodes
            if isinstance(n, cst.Call)
            and (
                self.scope.rule.matches(
                    n.func, "torch.isnan", "torch.isinf", "torch.isfinite", "torch.any", "torch.all", "torch.equal"
                )
                or (
                    method_name(n) in {"any", "all", "isnan", "isinf"}
                    and not n.args
                    and isinstance(n.func, cst.Attribute)
                    and not isinstance(n.func.value, (cst.List, cst.Tuple))
                )
            )
        ]
        return syncs or implicit or calls

    def _classify_test(self, test: cst.BaseExpression, statement: cst.BaseStatement, step_loop: StepLoop) -> None:
        found = self._control_syncs(test, self.tensors(step_loop))
        if found:
            self.sites.append(Site(CONTROL, statement, test, step_loop, syncs=found))

    def _bool_use(self, name: cst.Name, test: cst.BaseExpression) -> bool:
        """A tensor name used as a truth value or in a comparison (an implicit ``bool()`` sync)."""
        parent = self.scope.parent(name)
        if name is test:
            return True
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation)):
            return True
        return isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)

    def _under_profiling_flag(self, line: cst.SimpleStatementLine, step_loop: StepLoop) -> bool:
        """A synchronize under ``if profiling:``/``if args.timing:`` in the loop makes the timers the
        user asked for honest: a sync they chose, not per-step overhead (dreamer's phase timers)."""
        node: cst.CSTNode | None = self.scope.parent(line)
        while node is not None and node is not step_loop.node:
            if isinstance(node, cst.If) and _PROFILING_FLAG.search(self.scope.code(node.test)):
                return True
            node = self.scope.parent(node)
        return False

    def _classify(self, small: cst.BaseSmallStatement, line: cst.SimpleStatementLine | None, step_loop: StepLoop) -> None:
        if line is None:
            return  # `if x: y` on one line: too rare to rewrite
        tensors = self.tensors(step_loop)
        syncs = sync_calls(self.index, small, tensors)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            # Only a whole line can move under the interval, and not from the else of an interval
            # branch (it would never run there).
            alone = len(line.body) == 1 and not self._in_interval_else(line, step_loop)
            if alone and self.scope.rule.matches(
                call.func, "torch.cuda.synchronize", "torch.neuron.synchronize", "torch.accelerator.synchronize"
            ):
                if not self._under_profiling_flag(line, step_loop):
                    self.sites.append(Site(SYNCHRONIZE, line, small, step_loop))
                return
            if alone and self.scope.is_log_call(call):
                shown = syncs + formatted_tensors(self.index, call, tensors)
                if shown:
                    self.sites.append(Site(LOG, line, small, step_loop, syncs=shown))
                return
            if method_name(call) == "append" and syncs and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
                self.sites.append(Site(APPEND, line, small, step_loop, syncs=syncs, target=call.func.value.value))
                return
        if isinstance(small, cst.AugAssign) and syncs and isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign)):
            target = small.target.value if isinstance(small.target, cst.Name) else None
            self.sites.append(Site(ACCUMULATE, line, small, step_loop, syncs=syncs, target=target))
            return
        if (
            isinstance(small, cst.AugAssign)
            and isinstance(small.operator, cst.AddAssign)
            and isinstance(small.target, cst.Name)
            and _on_device(small.value)
        ):
            # ``running += loss.detach().float()``: an accumulator already kept on the device (NRN601's
            # form, or the user's): no sync to convert, but its logs move like a converted one's.
            self.sites.append(Site(ACCUMULATE, line, small, step_loop, target=small.target.value))
            return
        if isinstance(small, cst.Assert):
            found = self._control_syncs(small.test, tensors)
            if found:
                self.sites.append(Site(CONTROL, line, small, step_loop, syncs=found))
            return
        if isinstance(small, cst.Assign) and syncs:
            test = self._feeds_control_flow(small, step_loop)
            if test is not None:
                self.sites.append(Site(CONTROL, line, small, step_loop, syncs=syncs, note=self.scope.code(test)))
                return
        function: cst.CSTNode = step_loop.function if step_loop.function is not None else step_loop.node
        syncs = [c for c in syncs if not self._on_host(c, function)]
        if syncs:
            self.sites.append(Site(RESIDUAL, line, small, step_loop, syncs=syncs))

    def _on_host(self, sync: cst.CSTNode, function: cst.CSTNode) -> bool:
        """``starts.tolist()`` where ``starts = torch.randint(...)`` (no ``device=``) in the same
        function: a CPU tensor, whose read waits for no device (unless the file sets a default device)."""
        if not (isinstance(sync, cst.Call) and isinstance(sync.func, cst.Attribute) and isinstance(sync.func.value, cst.Name)):
            return False
        if self.default_device:
            return False
        values = self._assignments(function).get(sync.func.value.value, [])
        return bool(values) and all(
            isinstance(v, cst.Call)
            and self.scope.rule.matches(v.func, *_HOST_FACTORIES)
            and not any(a.keyword is not None and a.keyword.value == "device" for a in v.args)
            for v in values
        )

    def _assignments(self, function: cst.CSTNode) -> dict[str, list[cst.BaseExpression]]:
        """The values ``function`` assigns to each plain name (``x = ...``, one target)."""
        kept = self.assigned.get(id(function))
        if kept is not None:
            return kept[1]
        found: dict[str, list[cst.BaseExpression]] = {}
        for node in iter_nodes(self.index, function):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                found.setdefault(node.targets[0].target.value, []).append(node.value)
        self.assigned[id(function)] = (function, found)  # the node kept: its id stays its own
        return found

    def _in_interval_else(self, statement: cst.CSTNode, step_loop: StepLoop) -> bool:
        scope = self.scope
        child, current = statement, scope.parent(statement)
        while current is not None and current is not step_loop.node:
            if isinstance(current, cst.Else):
                owner = scope.parent(current)
                if isinstance(owner, cst.If) and is_interval_test(self.index, owner.test):
                    return True
            if isinstance(current, cst.If) and child is current.orelse and is_interval_test(self.index, current.test):
                return True  # elif of an interval branch
            child, current = current, scope.parent(current)
        return False

    def _feeds_control_flow(self, assign: cst.Assign, step_loop: StepLoop) -> cst.BaseExpression | None:
        """The test of an if/while/assert in the loop that reads a name this assignment sets."""
        names = {t.target.value for t in assign.targets if isinstance(t.target, cst.Name)}
        if not names:
            return None
        for node in iter_nodes(self.index, step_loop.node.body):
            if isinstance(node, (cst.If, cst.While, cst.Assert)):
                for inner in iter_nodes(self.index, node.test):
                    if isinstance(inner, cst.Name) and inner.value in names:
                        return node.test
        return None


def _on_device(value: cst.BaseExpression) -> bool:
    """``loss.detach().float()``, ``avg.detach().float() / accum_steps``: a detached device value
    (as NRN601 writes it) as the accumulated term, outside any call but its own conversions."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Divide, cst.Multiply)):
        return _on_device(value.left) and not isinstance(value.right, cst.Call)
    if isinstance(value, cst.Call) and method_name(value) == "float" and not value.args:
        value = value.func.value  # type: ignore[attr-defined]
    return isinstance(value, cst.Call) and method_name(value) == "detach" and not value.args
