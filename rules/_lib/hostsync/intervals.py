"""Logging intervals: is moving a per-step log statement under ``if step % N == 0`` worth it, and
what must move with it?

- A log statement that prints a value synchronised every step elsewhere (``d_x =
  out.mean().item()`` above it, an accumulator that stays on the host, a value that feeds control
  flow) would lose most of its lines and save nothing. When that value is assigned once, as
  ``name = <tensor expr>.item()``, and read only by logging statements that move, it becomes a
  *feeder*: the assignment keeps the tensor (``.detach()``) and each read in the log becomes
  ``name.item()`` (the same value, read when logged). Otherwise the log stays where it is and is
  marked (a residual sync). A read in a statement NRN612 runs only with a logger (``unlogged.py``)
  counts as a log's read: it becomes ``name.item()`` there too, no more often than before.
- A *running mean*: an accumulator kept on the device, logged and then reset in the same block
  (``log(train_loss); train_loss = 0.0``), is logged as its mean over the interval: the reset
  moves into the interval branch, a step count (``train_loss_steps``) counts the steps summed,
  the log reads ``float(train_loss) / train_loss_steps``. Reset anywhere else per step, the log
  stays (one step's value every N steps would be a different number).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from porter.engine.fastcst.walk import TreeIndex
from porter.rules._lib.hostsync.model import (
    ACCUMULATE,
    CONTROL,
    LOG,
    RESIDUAL,
    Feeder,
    RunningMean,
    Site,
    StepLoop,
)
from porter.rules._lib.hostsync.scope import FileScope
from porter.rules._lib.hostsync.syntax import assigned_names, iter_nodes
from porter.rules._lib.nodes import method_name

# Calls that only read a value: an assignment made of these can move under the interval.
_READERS = frozenset(
    {"item", "detach", "cpu", "float", "mean", "sum", "tolist", "numpy", "get_last_lr", "size", "numel", "max", "min", "norm", "std"}
)
_PURE_BUILTINS = frozenset({"float", "int", "round", "len", "abs", "dict", "str", "isinstance"})


def reads_only(index: TreeIndex, value: cst.BaseExpression) -> bool:
    """The value only reads: its calls are readers (``.item()``, ``.mean()``, ``float()``...), so
    computing it elsewhere moves no effect."""
    for node in iter_nodes(index, value):
        if isinstance(node, (cst.Lambda, cst.NamedExpr, cst.Yield, cst.Await)):
            return False
        if isinstance(node, cst.Call):
            name = method_name(node)
            if name not in _READERS and not (isinstance(node.func, cst.Name) and node.func.value in _PURE_BUILTINS):
                return False
    return True


class Intervals:
    def __init__(self, scope: FileScope, sites: list[Site], logger_only: Sequence[cst.CSTNode] = ()) -> None:
        self.scope = scope
        self.index = scope.index
        self.sites = sites
        self.shared: dict[int, Feeder] = {}  # one feeder per assignment, whichever logs read it
        # statements NRN612 runs only with a logger (unlogged.py): a feeder's read there is read
        # with .item() too, and runs no more often than before
        self.logger_only = logger_only

    def _in_logger_only(self, node: cst.CSTNode) -> bool:
        return any(self.scope.within(node, statement) for statement in self.logger_only)

    def decide(self) -> None:
        self._carry_assignments()
        logs = [site for site in self.sites if site.kind == LOG]
        for site in logs:
            reason = self._feeders(site, logs)
            if reason is None:
                reason = self._running_mean(site)
            if reason is not None:
                self._keep(site, reason)
        # A feeder read by a log that stays would print a tensor: that log's feeders stay too.
        changed = True
        while changed:
            changed = False
            moving = [site for site in logs if site.kind == LOG]
            for site in moving:
                for feeder in site.feeders:
                    if not all(any(self.scope.within(read, log.node) for log in moving) or self._in_logger_only(read)
                               for read in feeder.reads):
                        self._keep(site, f"it prints a value that another logging statement reads {site.loop.every}")
                        changed = True
                        break
        feeding = {id(feeder.statement) for site in self.sites if site.kind == LOG for feeder in site.feeders}
        self.sites[:] = [s for s in self.sites if not (s.kind == RESIDUAL and id(s.statement) in feeding)]

    def _keep(self, site: Site, reason: str) -> None:
        """The log statement stays where it is, marked as a sync left on the per-step path."""
        site.kind, site.note, site.kept = RESIDUAL, reason, True
        site.feeders, site.mean = [], None
        if not site.syncs:
            site.syncs = [site.node]

    # -- `logs = {...: loss.item()}` then `pbar.set_postfix(**logs)` ------------------------
    def _carry_assignments(self) -> None:
        """A per-step assignment that only the logging statement right after it reads moves with it.

        Its value must only read (``.item()``, ``.detach()``, ``get_last_lr()``, subscripts,
        displays): moving it must not move an effect.
        """
        for site in list(self.sites):
            if site.kind != RESIDUAL or site.note or not isinstance(site.node, cst.Assign):
                continue
            statement = site.statement
            targets = site.node.targets
            if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1 or len(targets) != 1:
                continue
            target = targets[0].target
            if not isinstance(target, cst.Name) or not reads_only(self.index, site.node.value):
                continue
            block = self.scope.parent(statement)
            if not isinstance(block, cst.IndentedBlock):
                continue
            statements = list(block.body)
            position = next(i for i, s in enumerate(statements) if s is statement)
            log = statements[position + 1] if position + 1 < len(statements) else None
            if log is None or self.scope.log_statement(log) is None or any(s.statement is log for s in self.sites):
                continue
            if not self._read_only_in(target.value, log, site.loop):
                continue
            assert isinstance(log, cst.SimpleStatementLine)
            self.sites.remove(site)
            self.sites.append(Site(LOG, log, log.body[0], site.loop, syncs=site.syncs, carried=statement))

    def _read_only_in(self, name: str, log: cst.CSTNode, loop: StepLoop) -> bool:
        function: cst.CSTNode = loop.function if loop.function is not None else loop.node
        for node in iter_nodes(self.index, function):
            if isinstance(node, cst.Name) and node.value == name:
                parent = self.scope.parent(node)
                if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Attribute) and parent.attr is node):
                    continue
                if not self.scope.within(node, log):
                    return False
        return True

    # -- values synchronised elsewhere ----------------------------------------------------
    def _names_read(self, node: cst.CSTNode) -> list[cst.Name]:
        return [n for n in iter_nodes(self.index, node) if isinstance(n, cst.Name) and self.scope.is_variable(n)]

    def _synced_every_step(self, loop: StepLoop) -> dict[str, Site]:
        """Names a per-step statement of ``loop`` sets from a host sync that stays every step."""
        found: dict[str, Site] = {}
        for site in self.sites:
            if site.loop is not loop:
                continue
            small = site.node
            if site.kind in {RESIDUAL, CONTROL} and isinstance(small, cst.Assign):
                for target in small.targets:
                    if isinstance(target.target, cst.Name):
                        found[target.target.value] = site
            elif site.kind == ACCUMULATE and site.note and site.target:
                found[site.target] = site
        return found

    def _feeders(self, site: Site, logs: list[Site]) -> str | None:
        """Set ``site.feeders``; or the reason the log must stay (a value that syncs every step anyway)."""
        synced = self._synced_every_step(site.loop)
        for name in self._names_read(site.node):
            source = synced.get(name.value)
            if source is None:
                continue
            feeder = self.shared.get(id(source.statement)) or self._feeder(source, name.value, logs)
            if feeder is None:
                shown = self.scope.code(source.node).strip()
                shown = shown if len(shown) <= 40 else shown[:37] + "..."
                return (
                    f"it prints {name.value}, synced {site.loop.every} anyway by `{shown}`: keep {name.value}"
                    " on the device (.detach()) and read it with this log under a logging interval"
                )
            self.shared[id(source.statement)] = feeder
            feeder.reads.append(name)
            if all(f is not feeder for f in site.feeders):
                site.feeders.append(feeder)
        return None

    def _feeder(self, source: Site, name: str, logs: list[Site]) -> Feeder | None:
        """``name = <tensor expr>.item()``, assigned once, read only by moving log statements."""
        small, loop = source.node, source.loop
        if source.kind != RESIDUAL or not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return None
        value = small.value
        if not (isinstance(value, cst.Call) and method_name(value) == "item" and not value.args):
            return None
        assert isinstance(value.func, cst.Attribute)
        receiver = value.func.value
        if isinstance(receiver, cst.Name) and self._changed_in_place(receiver.value, loop):
            return None  # .detach() shares storage: an in-place update later in the step would show
        if not isinstance(receiver, (cst.Name, cst.Call, cst.Attribute, cst.Subscript)):
            return None
        function: cst.CSTNode = loop.function if loop.function is not None else loop.node
        moving = [log.node for log in logs if log.loop is loop]
        elsewhere: list[cst.Name] = []  # reads in statements only a logger's presence runs
        for node in iter_nodes(self.index, function):
            if not isinstance(node, cst.Name) or node.value != name:
                continue
            parent = self.scope.parent(node)
            if isinstance(parent, cst.AssignTarget):
                if self.scope.parent(parent) is not small:
                    return None  # assigned twice
                continue
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if self._in_logger_only(node):
                elsewhere.append(node)
                continue
            if not any(self.scope.within(node, log) for log in moving):
                return None
        assert isinstance(source.statement, cst.SimpleStatementLine)
        return Feeder(source.statement, value, elsewhere)

    def _changed_in_place(self, name: str, loop: StepLoop) -> bool:
        for node in iter_nodes(self.index, loop.node.body):
            if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value == name:
                return True
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name):
                if node.func.value.value == name and node.func.attr.value.endswith("_") and not node.func.attr.value.startswith("_"):
                    return True
        return False

    # -- running means ----------------------------------------------------------------
    def _running_mean(self, site: Site) -> str | None:
        converted = {
            s.target: s for s in self.sites if s.kind == ACCUMULATE and not s.note and s.target and s.loop is site.loop
        }
        reads = [n for n in self._names_read(site.node) if n.value in converted]
        if not reads:
            return None
        name = reads[0].value
        if any(n.value != name for n in reads):
            return None  # two accumulators in one log: each keeps its own reads
        reset = self._reset_after(site, name)
        every = site.loop.every
        if reset is None:
            if self._reset_per_step(site.loop, name):
                return (
                    f"it logs {name}, which is reset {every}: log the mean of {name} over an interval"
                    " (sum, count and reset under the same `if`), or leave this as it is"
                )
            return None
        init = self._init(site.loop, name)
        function = site.loop.function
        if init is None or function is None:
            return f"it logs {name}, reset {every}, with no initial `{name} = 0` before the loop: log its mean over an interval"
        used = {n.value for n in iter_nodes(self.index, function, into_scopes=True) if isinstance(n, cst.Name)}
        count = next((c for c in (f"{name}_steps", f"{name}_count", f"{name}_n") if c not in used), None)
        if count is None:
            return f"it logs {name}, reset {every}: log its mean over an interval"
        site.mean = RunningMean(name, reset, init, count, [self._read_of(read) for read in reads])
        return None

    def _read_of(self, name: cst.Name) -> cst.CSTNode:
        """The read to divide: ``float(train_loss)`` when it is converted already, else the name."""
        arg = self.scope.parent(name)
        call = self.scope.parent(arg) if isinstance(arg, cst.Arg) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "float" and len(call.args) == 1:
            return call
        return name

    def _reset_assign(self, statement: cst.CSTNode, name: str) -> bool:
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        return (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value == name
            and isinstance(small.value, (cst.Integer, cst.Float))
        )

    def _reset_after(self, site: Site, name: str) -> cst.SimpleStatementLine | None:
        """``name = 0.0`` later in the log statement's block, with no read of ``name`` between."""
        block = self.scope.parent(site.statement)
        if not isinstance(block, cst.IndentedBlock):
            return None
        statements = list(block.body)
        position = next(i for i, s in enumerate(statements) if s is site.statement)
        for statement in statements[position + 1 :]:
            if self._reset_assign(statement, name):
                assert isinstance(statement, cst.SimpleStatementLine)
                return statement
            if name in {n.value for n in self._names_read(statement)} or name in assigned_names(self.index, statement):
                return None
        return None

    def _reset_per_step(self, loop: StepLoop, name: str) -> bool:
        return any(
            self._reset_assign(node, name) and self.scope.per_step(node, loop)
            for node in iter_nodes(self.index, loop.node.body)
        )

    def _init(self, loop: StepLoop, name: str) -> cst.SimpleStatementLine | None:
        """The ``name = <number>`` statement before the loop, in the loop's block or an enclosing one."""
        child: cst.CSTNode = loop.node
        current = self.scope.parent(child)
        while current is not None and not isinstance(current, (cst.FunctionDef, cst.Module)):
            if isinstance(current, cst.IndentedBlock):
                statements = list(current.body)
                position = next(i for i, s in enumerate(statements) if s is child)
                for statement in reversed(statements[:position]):
                    if self._reset_assign(statement, name):
                        assert isinstance(statement, cst.SimpleStatementLine)
                        return statement
            child, current = current, self.scope.parent(current)
        return None
