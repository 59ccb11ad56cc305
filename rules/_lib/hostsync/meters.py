"""Metric loggers (DeiT/timm ``MetricLogger`` over ``SmoothedValue`` meters): device values are kept
as tensors by the meter and read when the meter is read (printed at the logger's interval).

Shape recognised, all in this file (anything else: no plan, and the NRN606 markers stay):

* a *logger* class whose ``__init__`` sets ``self.<meters> = defaultdict(Meter)`` and whose
  ``update(self, **kwargs)`` loops ``for k, v in kwargs.items():`` with
  ``if isinstance(v, torch.Tensor): v = v.item()``, followed in that loop only by ``assert``
  statements and a last ``self.<meters>[k].update(v)``;
* its *meter* class ``Meter`` (a class of this file): ``__init__`` and ``update(self, value[, n])``
  (no ``*args``/``**kwargs``, no ``return`` of a value), every other method an indented block, no
  ``__getattr__``/``__getattribute__``/``__setattr__``, no
  ``_pending`` attribute yet (a ported meter is left alone: one pass is a fixed point), and none of
  the attributes ``update`` writes read from outside the class (``meter.total``: such a read
  would see values not yet read back);
* meters added to the logger are that class: ``X.<meters>[key] = Meter(...)``, or
  ``self.<meters>[name] = meter`` in a method (``add_meter``) every call of which, in this file,
  passes ``Meter(...)``.

Call sites stripped of ``.item()`` (the meter reads them later): ``logger.update(name=t.item())``
and ``logger.<meters>[key].update(t.item(), ...)``, with ``logger = Logger(...)`` in the same
function.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from porter.rules._lib.hostsync.scope import FileScope
from porter.rules._lib.imports import torch_alias
from porter.rules._lib.nodes import dotted

PENDING = "_pending"
READ = "_read_pending"


@dataclass
class MeterPlan:
    """What the port writes for one meter class, its loggers and their call sites."""

    meter: cst.ClassDef
    init_anchor: tuple[cst.BaseStatement, bool]  # where `self._pending = []` goes: first in __init__
    update: cst.FunctionDef
    value: str
    count: str | None  # update's second parameter (``n``), when it has one
    update_anchor: tuple[cst.BaseStatement, bool]  # (statement, insert before it)
    readers: list[tuple[cst.FunctionDef, cst.BaseStatement, bool]]
    logger_ifs: list[tuple[cst.If, cst.Call, str]] = field(default_factory=list)  # (if, v.item(), meter call code)
    stripped: list[cst.Call] = field(default_factory=list)  # `t.item()` whose tensor the meter keeps
    torch: str = "torch"

    def handled(self) -> set[int]:
        """The sync calls this plan removes from the per-step path."""
        return {id(call) for _, call, _ in self.logger_ifs} | {id(call) for call in self.stripped}


def _body(node: cst.FunctionDef | cst.ClassDef) -> list[cst.BaseStatement] | None:
    return list(node.body.body) if isinstance(node.body, cst.IndentedBlock) else None


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _anchor(function: cst.FunctionDef) -> tuple[cst.BaseStatement, bool] | None:
    """Where a statement goes first in ``function``: before its first statement, after a docstring."""
    body = _body(function)
    if not body:
        return None
    if _is_docstring(body[0]):
        return (body[1], True) if len(body) > 1 else (body[0], False)
    return body[0], True


def _item_call(node: cst.BaseExpression | None) -> cst.Call | None:
    """``t.item()`` (no arguments), else None."""
    if isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute) and node.func.attr.value == "item":
        return node
    return None


class MeterLoggers:
    def __init__(self, scope: FileScope) -> None:
        self.scope = scope
        self.module = scope.module
        self.classes = {c.name.value: c for c in scope.index.find(self.module, cst.ClassDef) if isinstance(c, cst.ClassDef)}

    def plans(self) -> list[MeterPlan]:
        torch = torch_alias(self.module)
        if torch is None:
            return []
        plans: dict[str, MeterPlan] = {}
        for logger in self.classes.values():
            found = self._logger(logger, torch)
            if found is None:
                continue
            meter_name, meters, if_node, item, call_code = found
            plan = plans.get(meter_name) or self._meter(self.classes[meter_name])
            if plan is None or not self._only_meter_added(meters, meter_name):
                continue
            plan.torch = torch
            plan.logger_ifs.append((if_node, item, call_code))
            plan.stripped += self._call_sites(logger.name.value, meters)
            plans[meter_name] = plan
        return list(plans.values())

    # ------------------------------------------------------------------ the logger
    def _logger(self, logger: cst.ClassDef, torch: str) -> tuple[str, str, cst.If, cst.Call, str] | None:
        methods = {s.name.value: s for s in _body(logger) or () if isinstance(s, cst.FunctionDef)}
        init, update = methods.get("__init__"), methods.get("update")
        if init is None or update is None or update.params.star_kwarg is None:
            return None
        meters = self._meters_of(init)
        if meters is None:
            return None
        attribute, meter_name = meters
        kwargs = update.params.star_kwarg.name.value
        for statement in _body(update) or ():
            if not isinstance(statement, cst.For) or not isinstance(statement.body, cst.IndentedBlock):
                continue
            if self.scope.code(statement.iter).replace(" ", "") != f"{kwargs}.items()":
                continue
            target = statement.target
            if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
                continue
            key, value = (dotted(e.value) for e in target.elements)
            found = self._tensor_branch(list(statement.body.body), key, value, attribute, torch)
            if found is not None:
                return (meter_name, attribute, *found)
        return None

    def _meters_of(self, init: cst.FunctionDef) -> tuple[str, str] | None:
        """(``meters``, ``Meter``) for ``self.meters = defaultdict(Meter)`` with Meter a class here."""
        for statement in _body(init) or ():
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Call)):
                    continue
                target = dotted(small.targets[0].target) or ""
                call = small.value
                if not target.startswith("self.") or target.count(".") != 1 or len(call.args) != 1:
                    continue
                if not self.scope.rule.matches(call.func, "collections.defaultdict"):
                    continue
                meter = dotted(call.args[0].value)
                if meter in self.classes:
                    return target.split(".", 1)[1], meter
        return None

    def _tensor_branch(
        self, body: list[cst.BaseStatement], key: str | None, value: str | None, attribute: str, torch: str
    ) -> tuple[cst.If, cst.Call, str] | None:
        if not body or key is None or value is None:
            return None
        first, rest = body[0], body[1:]
        if not isinstance(first, cst.If) or first.orelse is not None or not isinstance(first.body, cst.IndentedBlock):
            return None
        if self.scope.code(first.test).replace(" ", "") != f"isinstance({value},{torch}.Tensor)":
            return None
        inner = first.body.body
        if len(inner) != 1 or not isinstance(inner[0], cst.SimpleStatementLine) or len(inner[0].body) != 1:
            return None
        assign = inner[0].body[0]
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or dotted(assign.targets[0].target) != value:
            return None
        item = _item_call(assign.value)
        if item is None:
            return None
        if dotted(item.func.value) != value:  # type: ignore[attr-defined]
            return None
        if not rest or not all(self._assert(s) for s in rest[:-1]):
            return None
        call_code = f"self.{attribute}[{key}].update({value})"
        last = rest[-1]
        if not (isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and isinstance(last.body[0], cst.Expr)):
            return None
        if self.scope.code(last.body[0].value).replace(" ", "") != call_code:
            return None
        return first, item, call_code

    @staticmethod
    def _assert(statement: cst.BaseStatement) -> bool:
        return isinstance(statement, cst.SimpleStatementLine) and all(isinstance(s, cst.Assert) for s in statement.body)

    def _only_meter_added(self, attribute: str, meter: str) -> bool:
        """Every meter put into a logger of the file is a ``Meter``: ``X.<meters>[key] = Meter(...)``,
        or ``self.<meters>[name] = param`` in a method (``add_meter``) every call of which passes
        ``Meter(...)`` for that parameter."""
        adders: dict[str, tuple[int, str]] = {}  # method name -> (argument position, parameter name)
        for node in self.scope.index.find(self.module, cst.Assign):
            if not isinstance(node, cst.Assign):
                continue
            for target in node.targets:
                held = target.target
                if not (isinstance(held, cst.Subscript) and isinstance(held.value, cst.Attribute) and held.value.attr.value == attribute):
                    continue
                if isinstance(node.value, cst.Call) and dotted(node.value.func) == meter:
                    continue
                function = self.scope.function_of(node)
                params = [p.name.value for p in function.params.params] if function is not None else []
                if function is None or not isinstance(node.value, cst.Name) or node.value.value not in params[1:]:
                    return False
                adders[function.name.value] = (params.index(node.value.value) - 1, node.value.value)
        for node in self.scope.index.find(self.module, cst.Call):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in adders):
                continue
            position, name = adders[node.func.attr.value]
            positional = [a for a in node.args if a.keyword is None]
            given = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == name), None)
            if given is None and len(positional) > position and not any(a.star for a in positional[: position + 1]):
                given = positional[position].value
            if not (isinstance(given, cst.Call) and dotted(given.func) == meter):
                return False
        return True

    # ------------------------------------------------------------------ the meter
    def _meter(self, meter: cst.ClassDef) -> MeterPlan | None:
        methods = [s for s in _body(meter) or () if isinstance(s, cst.FunctionDef)]
        by_name = {m.name.value: m for m in methods}
        init, update = by_name.get("__init__"), by_name.get("update")
        if init is None or update is None or READ in by_name or f"self.{PENDING}" in self.scope.code(meter):
            return None
        if {"__getattr__", "__getattribute__", "__setattr__"} & set(by_name):
            return None  # attribute hooks could run before _pending exists
        params = update.params
        if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or params.star_kwarg is not None or params.kwonly_params:
            return None
        names = [p.name.value for p in (*params.posonly_params, *params.params)]
        if names[:1] != ["self"] or len(names) not in (2, 3):
            return None
        if any(isinstance(n, cst.Return) and n.value is not None for n in self.scope.index.find(update, cst.Return)):
            return None
        init_anchor, anchor = _anchor(init), _anchor(update)
        if init_anchor is None or anchor is None:
            return None
        readers: list[tuple[cst.FunctionDef, cst.BaseStatement, bool]] = []
        for method in methods:
            if method in (init, update) or any(dotted(d.decorator) in ("staticmethod", "classmethod") for d in method.decorators):
                continue
            where = _anchor(method)
            if where is None:
                return None  # a one-line method: no place for the read
            readers.append((method, *where))
        if self._read_outside(meter, self._written(update)):
            return None
        return MeterPlan(meter, init_anchor, update, names[1], names[2] if len(names) == 3 else None, anchor, readers)

    def _written(self, update: cst.FunctionDef) -> set[str]:
        """Attributes ``update`` changes: ``self.a = ...``, ``self.a += ...``, ``self.a.append(...)``."""
        written: set[str] = set()
        for node in self.scope.index.find(update, cst.Attribute):
            if isinstance(node, cst.Attribute) and dotted(node.value) == "self":
                written.add(node.attr.value)
        return written

    def _read_outside(self, meter: cst.ClassDef, attributes: set[str]) -> bool:
        for node in self.scope.index.find(self.module, cst.Attribute):
            if not isinstance(node, cst.Attribute) or node.attr.value not in attributes or dotted(node.value) == "self":
                continue
            if self.scope.class_of(node) != meter.name.value:
                return True
        return False

    # ------------------------------------------------------------------ call sites
    def _call_sites(self, logger: str, attribute: str) -> list[cst.Call]:
        stripped: list[cst.Call] = []
        for function in self.scope.index.find(self.module, cst.FunctionDef):
            if not isinstance(function, cst.FunctionDef):
                continue
            bound = self._bound_to(function, logger)
            for node in self.scope.index.find(function, cst.Call) if bound else ():
                if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute) or node.func.attr.value != "update":
                    continue
                if self.scope.function_of(node) is not function:
                    continue
                receiver = node.func.value
                if dotted(receiver) in bound:  # logger.update(loss=loss.item())
                    stripped += [c for a in node.args if a.keyword is not None for c in [_item_call(a.value)] if c is not None]
                elif isinstance(receiver, cst.Subscript) and isinstance(receiver.value, cst.Attribute):
                    holder = receiver.value  # logger.meters["acc1"].update(acc1.item(), n=...)
                    if holder.attr.value == attribute and dotted(holder.value) in bound and node.args and node.args[0].keyword is None:
                        found = _item_call(node.args[0].value)
                        if found is not None:
                            stripped.append(found)
        return stripped

    def _bound_to(self, function: cst.FunctionDef, logger: str) -> set[str]:
        """Names the function binds to ``Logger(...)`` (and to nothing else)."""
        bound: dict[str, bool] = {}
        for node in self.scope.index.find(function, cst.Assign):
            if not isinstance(node, cst.Assign) or self.scope.function_of(node) is not function:
                continue
            for target in node.targets:
                name = target.target.value if isinstance(target.target, cst.Name) else None
                if name is None:
                    continue
                built = isinstance(node.value, cst.Call) and dotted(node.value.func) == logger
                bound[name] = bound.get(name, True) and built
        return {name for name, only in bound.items() if only}
