"""Accumulators: can a per-step ``total += loss.item()`` (or ``losses.append(loss.item())``) be
kept on the device, and where is it read?

Reads are found by name in the enclosing function. Each read outside the per-step path gets one
conversion. Its type follows what is accumulated, never the first literal: ``total = 0`` then
``total += loss.item()`` is a float sum, read back as ``float(total)``; only a sum of counts of
booleans (``(pred == y).sum()``) read into an integer-initialised name is read as ``int(...)``.
"""

from __future__ import annotations

import libcst as cst

from porter.rules._lib.hostsync.model import ACCUMULATE, APPEND, LOG, Site, StepLoop
from porter.rules._lib.hostsync.scope import FileScope
from porter.rules._lib.hostsync.syntax import count_valued, declared_global, iter_nodes
from porter.rules._lib.nodes import dotted, method_name


class Accumulators:
    def __init__(self, scope: FileScope, loops: list[StepLoop], sites: list[Site]) -> None:
        self.scope = scope
        self.index = scope.index
        self.loops = loops
        self.sites = sites

    def classify(self) -> None:
        """Set each accumulation's reads to convert (``wraps``), or its ``note`` when it must stay."""
        log_lines = {id(site.statement) for site in self.sites if site.kind == LOG}
        wrapped: set[str] = set()  # one set of read conversions per accumulator
        for site in list(self.sites):
            if site.kind not in {ACCUMULATE, APPEND}:
                continue
            if site.target is None:
                site.note = "not a local name"
                continue
            function = site.loop.function
            if function is None:
                site.note = "module-level loop"
                continue
            if declared_global(self.index, function, site.target):
                site.note = "global accumulator"
                continue
            if not all(isinstance(s, cst.Call) and method_name(s) in {"item", "numpy"} for s in site.syncs):
                site.note = "cannot keep this expression on the device"
                continue
            wraps = self._reads(site, function, log_lines)
            if wraps is None:
                continue
            if not site.syncs:
                continue  # already on the device: its reads are the script's (or were converted before)
            if site.target not in wrapped:
                site.wraps = wraps
                wrapped.add(site.target)
        # An accumulator already on the device that is read in a way a log cannot convert is the
        # script's own business: no marker, and not logged as a running mean.
        self.sites[:] = [s for s in self.sites if not (s.kind == ACCUMULATE and not s.syncs and s.note)]

    def logs_reading_converted(self) -> list[Site]:
        """Per-step logging statements that read a converted accumulator: they must move too."""
        converted = {site.target for site in self.sites if site.kind in {ACCUMULATE, APPEND} and not site.note}
        known = {id(site.statement) for site in self.sites if site.kind == LOG}
        found: list[Site] = []
        if not converted:
            return found
        for step_loop in reversed(self.loops):  # innermost first: its counter is the step
            for node in iter_nodes(self.index, step_loop.node.body):
                call = self.scope.log_statement(node)
                if call is None or id(node) in known or not self.scope.per_step(node, step_loop):
                    continue
                if any(isinstance(n, cst.Name) and n.value in converted for n in iter_nodes(self.index, call)):
                    known.add(id(node))
                    assert isinstance(node, cst.SimpleStatementLine)
                    found.append(Site(LOG, node, node.body[0], step_loop))
        return found

    def _kind(self, function: cst.FunctionDef, name: str) -> str:
        """``int`` only for a sum of boolean counts into an integer-initialised name."""
        counts = all(
            all(count_valued(sync, self.scope.rule) for sync in site.syncs)  # type: ignore[arg-type]
            for site in self.sites
            if site.kind == ACCUMULATE and site.target == name
        )
        return "int" if counts and self._int_initialised(function, name) else "float"

    def _reads(self, site: Site, function: cst.FunctionDef, log_lines: set[int]) -> list[tuple[cst.CSTNode, str]] | None:
        """The reads of the accumulator to wrap, or None (and a note) when one cannot be converted."""
        name = site.target
        assert name is not None
        scope = self.scope
        kind = self._kind(function, name)
        wraps: list[tuple[cst.CSTNode, str]] = []
        for node in iter_nodes(self.index, function.body):
            if not isinstance(node, cst.Name) or node.value != name:
                continue
            parent = scope.parent(node)
            if isinstance(parent, cst.AugAssign) and parent.target is node:
                if parent is site.node or any(s.node is parent for s in self.sites if s.target == name):
                    continue
                site.note = f"{name} is also updated elsewhere"
                return None
            if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Assign) and node in [t.target for t in parent.targets]):
                continue
            if isinstance(parent, cst.Element) and isinstance(scope.parent(parent), cst.Tuple):
                if isinstance(scope.parent(scope.parent(parent)), cst.AssignTarget):  # type: ignore[arg-type]
                    continue
            if isinstance(parent, cst.Attribute) and parent.value is node:
                if site.kind == APPEND and parent.attr.value in {"append", "clear"}:
                    continue
                site.note = f"{name}.{parent.attr.value} is used"
                return None
            if isinstance(parent, (cst.Global, cst.Nonlocal, cst.NameItem)):
                site.note = "global"
                return None
            if isinstance(parent, cst.Arg) and isinstance(scope.parent(parent), cst.Call):
                call = scope.parent(parent)
                assert isinstance(call, cst.Call)
                callee = dotted(call.func)
                if callee == "len":
                    continue
                if site.kind == APPEND and callee == "sum" and len(call.args) == 1:
                    if not self._per_step_read(call, site.loop, log_lines):
                        wraps.append((call, "float"))
                        continue
                    site.note = f"{name} is read {site.loop.every}"
                    return None
                if callee in {"float", "int"} and site.kind == ACCUMULATE:
                    continue  # already converted where it is read
            if site.kind == APPEND:
                if isinstance(parent, cst.Subscript) and parent.value is node and not self._per_step_read(parent, site.loop, log_lines):
                    wraps.append((parent, "float"))
                    continue
                site.note = f"the list {name} is consumed out of view"
                return None
            if self._per_step_read(node, site.loop, log_lines):
                site.note = f"{name} is read {site.loop.every}"
                return None
            wraps.append((node, kind))
        return wraps

    def _per_step_read(self, node: cst.CSTNode, step_loop: StepLoop, log_lines: set[int]) -> bool:
        """A read inside the loop that runs every step and is not in a statement the logging rule moves."""
        scope = self.scope
        current = scope.parent(node)
        statement: cst.CSTNode | None = None
        while current is not None and current is not step_loop.node:
            if statement is None and isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                statement = current
            current = scope.parent(current)
        if current is None or statement is None or not scope.per_step(statement, step_loop):
            return False
        if not isinstance(statement, cst.SimpleStatementLine):
            return True  # a test of an if/while in the loop
        return scope.log_statement(statement) is None

    def _int_initialised(self, function: cst.FunctionDef, name: str) -> bool:
        for node in iter_nodes(self.index, function.body):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Name) and target.target.value == name:
                        return isinstance(node.value, cst.Integer)
                    if isinstance(target.target, cst.Tuple) and isinstance(node.value, cst.Tuple):
                        for left, right in zip(target.target.elements, node.value.elements):
                            if isinstance(left.value, cst.Name) and left.value.value == name:
                                return isinstance(right.value, cst.Integer)
        return False
