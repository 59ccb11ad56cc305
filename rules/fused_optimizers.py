"""NRN501-NRN503: ``torch.optim.AdamW`` → ``fused=True``; ``torch.optim.Adam`` → fused AdamW or foreach Adam."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

import libcst as cst
import libcst.matchers as m

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import drop_keyword, keyword, positional, set_keyword_keep_layout
from porter.rules._lib.nodes import dotted, string_value, with_string_value
from porter.rules._lib.optim import (
    ADAM,
    ADAMW,
    AdamPlan,
    CompiledSteps,
    adam_plan,
    foreach_adam,
    fused_adamw,
    literal_bool,
    tensor_lr,
    weight_decay_of,
    without_double_star,
)
from porter.rules._lib.precision import ScalerStays

_FUSED_KEYS = frozenset({"fused", "foreach"})
_ADAM_WORD = re.compile(r"\bAdam\b")
_LOG_CALLS = frozenset({"print", "info", "debug", "warning", "log", "write", "set_description"})


class FusedOptimizers(Rule):
    """Use the fused AdamW kernel TorchNeuron implements natively.

    What it does:
        ``torch.optim.AdamW(...)`` gets ``fused=True``; a user's ``fused=use_fused`` is kept (the
        device rules port the ``device.type == "cuda"`` it reads; an Adam with it becomes AdamW with it); nanoGPT's ``extra_args = dict(fused=True) if use_fused else dict()`` …
        ``AdamW(..., **extra_args)`` becomes ``AdamW(..., fused=True)`` (the ``**extra_args`` is dropped
        from the call when the file shows it holds only ``fused``/``foreach``; the now-unused
        ``extra_args``/``use_fused`` lines are left as they are); ``foreach=`` beside it is dropped.
        NRN502: ``torch.optim.Adam`` with no or a literal-zero ``weight_decay`` (or with
        ``decoupled_weight_decay=True``) becomes ``torch.optim.AdamW(..., weight_decay=0.0,
        fused=True)`` (its own weight decay kept when decoupled); with a literal weight decay > 0 it stays
        Adam with ``foreach=True`` (``fused=True`` dropped). NRN503 marks an Adam whose weight decay is
        not a literal, and optimizers whose ``**kwargs`` the file does not show. When a loss scaler
        stays active (a GradScaler built in the file while float16 remains reachable, see
        ``ScalerStays`` in ``rules/_lib/precision.py``) no ``fused=True`` is added to an optimizer
        it may step, and a user's ``fused=True`` there gets an NRN503 marker; an optimizer the kept
        scaler never steps is fused as usual. Heuristic (``_stepped`` in ``rules/grad_scaler.py``,
        ``optimizers_held`` in ``rules/_lib/optim.py``): the scaler steps what ``scaler.step(opt)``
        / ``scaler.unscale_(opt)`` name and what is passed beside it to a call (``train_one_epoch(model,
        optimizer, scaler)``), followed through plain assignments of the optimizer's construction;
        an optimizer name the file does not show (a parameter, ``build_optimizer(...)``'s result), a
        scaler stored, returned or passed without an optimizer beside it, a timm scaler wrapper or an
        Accelerate fp16 choice keeps fused off every optimizer of the file. No ``fused=True`` is added
        (and an Adam stays Adam) where fused is slower on Neuron: a learning rate built as a tensor
        in the call (``lr=torch.tensor(3e-4, device=device)``: Neuron's ``_fused_adamw_.tensor_lr``
        reads it with ``lr.item()``, a host sync every step), or an optimizer stepped inside a
        function the file compiles (``update = torch.compile(update)``, torchrl's
        ``compile_with_warmup(update)``, ``@torch.compile``; ``CompiledSteps`` in
        ``rules/_lib/optim.py``: Dynamo does not trace fused optimizers, so the compiled step would
        break its graph at every step, where the default foreach path compiles into it). When every Adam of the file became AdamW, log
        text naming ``Adam`` in a ``print``/``logger.*`` call says ``AdamW``.

    Why:
        TorchNeuron registers a native ``aten::_fused_adamw_`` kernel; PyTorch accepts ``fused=True``
        on the ``neuron`` (PrivateUse1) device (torch-neuronx source, python_ops/torch_mlir/ops/optimizer.py). nanoGPT-style checks enable fused only when
        ``device_type == "cuda"``, which is False on Trainium. ``foreach`` and ``fused`` together raise.
        ``aten::_fused_adam_`` (``Adam(fused=True)``) has no Neuron kernel in the April-2026 source
        snapshot and falls back to the CPU (torch-neuronx source, python_ops/torch_mlir/ops/optimizer.py; unverified on the 2.13 wheels — check with
        ``torch_neuronx.get_fallback_ops()``). Adam without weight decay performs exactly AdamW's update
        with ``weight_decay=0`` (AdamW's own default is 0.01, hence written out); measured identical
        (DESIGN.md, parity). Neuron's fused AdamW kernel ignores the ``grad_scale``/``found_inf``
        arguments a GradScaler passes (neuron-torch-neuronx source, torch_neuronx/neuron.py): fused under a scaler gives unscaled,
        unskipped updates. Its tensor-``lr`` overload (``_fused_adamw_.tensor_lr``) reads the rate with
        ``lr.item()`` (torch-neuronx source, python_ops/torch_mlir/ops/optimizer.py). torch 2.13's Dynamo wraps every ``torch.optim`` ``_fused_*`` function in
        ``torch.compiler.disable`` ("don't trace into fused optimizer", ``torch/_dynamo/eval_frame.py``).

    Before:
        optimizer = torch.optim.AdamW(groups, lr=lr, betas=betas, **extra_args)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4, fused=True)

    After:
        optimizer = torch.optim.AdamW(groups, lr=lr, betas=betas, fused=True)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0, fused=True)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4, foreach=True)

    Safety:
        Safe: the fused kernel computes the same update (last-digit differences from a different
        reduction order); hyper-parameters are never changed. ``differentiable=True`` optimizers and an
        explicit literal ``fused=False`` are left alone. A ``weight_decay`` set per parameter group
        (``{"params": ..., "weight_decay": 1e-4}``) is Adam's L2 decay in that group, not AdamW's: an Adam
        whose params argument is, or is assigned from, groups that set ``weight_decay`` — or whose params
        come from a variable the file does not show (a function parameter, a list filled elsewhere) —
        stays Adam with an NRN503 marker, as does an Adam that later gets groups through
        ``opt.add_param_group({...})`` setting (or maybe setting) ``weight_decay``, or a file that
        assigns a ``["weight_decay"]`` key. ``**kwargs`` are dropped only when the file shows a dict of
        ``fused``/``foreach`` only (and adds no other key to it); otherwise NRN503 marks the call. An Adam
        built together with an Adam that stays Adam (both returned in one tuple or passed to one call,
        by the names they are assigned to in the same function) stays too, with an NRN503 marker:
        optimizers built together stay one type (torchrl's ``group_optimizers`` raises on mixed types). SGD and the other optimizers are left alone: PyTorch already
        picks the ``foreach`` path on the neuron device by default, so ``foreach=True`` would change nothing.
    """

    code: ClassVar[str] = "NRN501"
    name: ClassVar[str] = "fused-optimizers"
    summary: ClassVar[str] = "torch.optim.AdamW -> fused=True; Adam without weight decay -> AdamW(weight_decay=0.0, fused=True)"
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("Adam",)
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN502": "torch.optim.Adam -> AdamW(weight_decay=0.0, fused=True), or Adam(foreach=True) with weight decay",
        "NRN503": "optimizer left as it is: weight decay or **kwargs not visible (review marker)",
    }
    safe_extra_codes: ClassVar[frozenset[str]] = frozenset({"NRN502"})
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 70

    def visit_Module(self, node: cst.Module) -> None:
        self._adams: list[cst.Call] = []  # every Adam construction, and those made AdamW
        self._renamed: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, *ADAMW):
            self._adamw(node)
        elif self.matches(node.func, *ADAM):
            self._adams.append(node)
            self._adam(node)

    def _scaler_line(self, call: cst.Call) -> int | None:
        """The line of a loss scaler that stays active (float16 reachable) and may step the
        optimizer ``call`` builds, else None."""
        return self.analysis(ScalerStays).for_optimizer(call)

    def _unfusable(self, call: cst.Call) -> bool:
        """Whether ``fused=True`` would make this optimizer slower on Neuron: a learning rate built
        as a tensor (Neuron's ``_fused_adamw_.tensor_lr`` reads it with ``lr.item()``, a host sync at
        every step), or a step inside a function the file compiles (``CompiledSteps``: Dynamo does
        not trace fused optimizers, a graph break at every step)."""
        return tensor_lr(self, call) or self.analysis(CompiledSteps).for_optimizer(call) is not None

    def _mark_scaler(self, call: cst.Call, line: int, what: str) -> None:
        self.mark(
            call,
            f"{what}: a GradScaler (line {line}) stays for float16 and Neuron's fused AdamW ignores "
            "grad_scale/found_inf (unscaled, unskipped steps); keep fused off while float16 is used",
            code="NRN503",
        )

    # ----------------------------------------------------------------- AdamW
    def _adamw(self, call: cst.Call) -> None:
        if literal_bool(_value(call, "differentiable")) or literal_bool(_value(call, "fused")) is False:
            return
        if keyword(call, "fused") is not None and literal_bool(_value(call, "fused")) is None:
            return  # the user's fused=<expression>: kept (NRN101 ports the device test it reads)
        if any(arg.star == "*" for arg in call.args):
            return
        if literal_bool(_value(call, "fused")) is None and self._unfusable(call):
            return  # left unfused: fused is slower here (tensor lr, compiled step)
        stars = [arg for arg in call.args if arg.star == "**"]
        scaler = self._scaler_line(call)
        if scaler is not None:  # fused=True would silently ignore the scaler: never added, a user's is marked
            if literal_bool(_value(call, "fused")) or stars:
                self._mark_scaler(call, scaler, "AdamW(fused=True) with a GradScaler" if not stars else "AdamW(**kwargs) may set fused=True")
            return
        droppable = [arg for arg in stars if self._only_fused_keys(call, arg.value)]
        if len(droppable) != len(stars):
            self.mark(call, "AdamW with **kwargs: make sure they hold fused=True (native _fused_adamw_ kernel)", code="NRN503")
            return
        if not droppable and literal_bool(_value(call, "fused")) and keyword(call, "foreach") is None:
            return

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            for arg in droppable:
                updated = without_double_star(updated, arg)
            return fused_adamw(updated, decay_default=False)

        self.replace(call, transform, "AdamW: fused=True (native _fused_adamw_ kernel on Neuron)")

    def _only_fused_keys(self, call: cst.Call, value: cst.BaseExpression) -> bool:
        """Whether ``**value`` is shown to hold only ``fused``/``foreach`` (nanoGPT's ``extra_args``)."""
        if isinstance(value, cst.Name):
            assigned = self._assigned_value(call, value.value)
            return assigned is not None and _fused_dict(assigned) and not _mutated(self.context.module, value.value)
        return _fused_dict(value)

    def _assigned_value(self, call: cst.Call, name: str) -> cst.BaseExpression | None:
        """The value last assigned to ``name`` in the statements before ``call`` (same function)."""
        current: cst.CSTNode = self.statement_of(call)
        while True:
            block = self.parent(current)
            body = getattr(block, "body", None)
            if isinstance(body, (list, tuple)) and current in body:
                for statement in reversed(body[: body.index(current)]):
                    if isinstance(statement, cst.SimpleStatementLine):
                        for small in statement.body:
                            if isinstance(small, cst.Assign) and any(
                                isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
                            ):
                                return small.value
            if block is None or isinstance(block, (cst.Module, cst.FunctionDef)):
                return None
            parent = self.parent(block)
            if parent is None or isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
                return None
            current = parent

    # ----------------------------------------------------------------- Adam
    def _adam(self, call: cst.Call) -> None:
        if literal_bool(_value(call, "fused")) is False:
            return  # an explicit choice; nothing to port
        if literal_bool(_value(call, "differentiable")) or any(arg.star for arg in call.args):
            if any(arg.star for arg in call.args):
                self.mark(call, "Adam with *args/**kwargs: port to AdamW(weight_decay=0.0, fused=True) by hand if no weight decay", code="NRN503")
            return
        decoupled = literal_bool(_value(call, "decoupled_weight_decay"))
        plan: AdamPlan = "adamw" if decoupled else adam_plan(call)
        if plan == "adamw" and not decoupled and self._group_decay(call):
            self.mark(
                call,
                "Adam parameter groups may set weight_decay (L2, not AdamW's): if none does, use AdamW(weight_decay=0.0, fused=True)",
                code="NRN503",
            )
            plan = "adam-groups"
        if plan == "adamw" and not decoupled and self._added_group_decay(call):
            self.mark(
                call,
                "Adam gets parameter groups later (add_param_group / param_groups) that may set weight_decay "
                "(L2 in Adam, decoupled in AdamW): if none does, use AdamW(weight_decay=0.0, fused=True)",
                code="NRN503",
            )
            plan = "adam-groups"
        if plan == "adamw" and self._scaler_line(call) is not None:
            return  # fused AdamW would ignore the GradScaler that float16 keeps
        if plan == "adamw" and keyword(call, "fused") is None and self._unfusable(call):
            return  # AdamW unfused is Adam: nothing to gain (tensor lr, compiled step)
        kept = self._kept_beside(call) if plan == "adamw" else None
        if kept is not None:
            self.mark(call, f"Adam kept beside the Adam that stays Adam on line {kept}: optimizers built together stay "
                      "one type (torchrl's group_optimizers requires it); port them to AdamW together by hand", code="NRN503")
            return
        if plan == "adamw":
            self._adam_to_adamw(call, keep_decay=bool(decoupled))
            self._renamed.append(call)
            return
        if plan == "adam-review":
            self.mark(
                call,
                "Adam weight decay not a literal: if it is 0, AdamW(weight_decay=0.0, fused=True) is identical and fused on Neuron",
                code="NRN503",
            )
        if keyword(call, "fused") is not None and literal_bool(_value(call, "fused")) is not False:
            self.replace(call, lambda n: foreach_adam(n) if isinstance(n, cst.Call) else n, "Adam: fused -> foreach=True (no Neuron _fused_adam_ kernel)", code="NRN502")
        elif plan == "adam-foreach" and keyword(call, "foreach") is None:
            self.replace(call, lambda n: foreach_adam(n) if isinstance(n, cst.Call) else n, "Adam with weight decay: foreach=True", code="NRN502")

    def _kept_beside(self, call: cst.Call) -> int | None:
        """The line of an Adam built together with this one (both returned in one tuple, or both
        passed to one call, directly or through the names they are assigned to in the same function)
        that stays Adam (weight decay or kwargs not in view, a literal decay, groups, fused=False)."""
        scope = next((a for a in self.ancestors(call) if isinstance(a, cst.FunctionDef)), self.context.module)
        named = {
            node.targets[0].target.value: node.value
            for node in m.findall(scope, m.Assign(targets=[m.AssignTarget(target=m.Name())], value=m.Call()))
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) and isinstance(node.targets[0].target, cst.Name)
            and self.matches(node.value.func, *ADAM)
        }

        def adam(value: cst.BaseExpression) -> cst.Call | None:
            if isinstance(value, cst.Call) and self.matches(value.func, *ADAM):
                return value
            return named.get(value.value) if isinstance(value, cst.Name) else None

        for node in m.findall(scope, m.Return(value=m.Tuple()) | m.Call()):
            values = ([e.value for e in node.value.elements] if isinstance(node, cst.Return) and isinstance(node.value, cst.Tuple)
                      else [a.value for a in node.args] if isinstance(node, cst.Call) else [])
            together = [found for found in map(adam, values) if found is not None]
            if not any(found is call for found in together):
                continue
            for other in together:
                if other is call or literal_bool(_value(other, "decoupled_weight_decay")):
                    continue
                if (any(arg.star for arg in other.args) or literal_bool(_value(other, "fused")) is False
                        or adam_plan(other) != "adamw" or self._group_decay(other) or self._added_group_decay(other)
                        or (keyword(other, "fused") is None and self._unfusable(other))):
                    return self.position(other)[0]
        return None

    def _added_group_decay(self, call: cst.Call) -> bool:
        """Whether groups added later to this optimizer may set ``weight_decay``:
        ``opt.add_param_group({...})`` whose dict sets it (or is not in view), or an assignment of
        a ``"weight_decay"`` key anywhere in the file (``group["weight_decay"] = wd``)."""
        parent = self.parent(call)
        target = parent.targets[0].target if isinstance(parent, cst.Assign) and len(parent.targets) == 1 else None
        name = dotted(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
        for node in m.findall(self.context.module, m.Call(func=m.Attribute(attr=m.Name("add_param_group")))):
            assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            if name is not None and dotted(node.func.value) != name:
                continue
            group = node.args[0].value if node.args else None
            if not isinstance(group, (cst.Dict, cst.Call)) or _mentions_weight_decay(group):
                return True
        for node in m.findall(self.context.module, m.AssignTarget(target=m.Subscript())):
            assert isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript)
            index = node.target.slice[0].slice if len(node.target.slice) == 1 else None
            if isinstance(index, cst.Index) and string_value(index.value) == "weight_decay":
                return True
        return False

    # ----------------------------------------------------------------- log strings
    def leave_Module(self, original_node: cst.Module) -> None:
        """When every Adam of the file became AdamW, a log line that names Adam says AdamW."""
        if not self._renamed or len(self._renamed) != len(self._adams):
            return
        for node in m.findall(original_node, m.SimpleString()):
            assert isinstance(node, cst.SimpleString)
            value = string_value(node)
            if value is None or not _ADAM_WORD.search(value) or not self._logged(node):
                continue
            new = _ADAM_WORD.sub("AdamW", value)
            self.replace(node, lambda n, new=new: with_string_value(n, new), "log text names the optimizer: Adam -> AdamW", code="NRN502")  # type: ignore[misc]

    def _logged(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is (part of) an argument of a print/log call."""
        current: cst.CSTNode | None = self.parent(node)
        while current is not None and not isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            if isinstance(current, cst.Call):
                func = current.func
                name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
                return name in _LOG_CALLS
            current = self.parent(current)
        return False

    def _group_decay(self, call: cst.Call) -> bool:
        """Whether the params argument is, or may be, a list of groups that set ``weight_decay``."""
        first = positional(call, 0) or keyword(call, "params")
        if first is None:
            return True
        value = first.value
        if isinstance(value, cst.Name):
            assigned = self._assigned_value(call, value.value)
            if assigned is None:
                return True  # a parameter or a global: not in view
            value = assigned
        return _mentions_weight_decay(value)

    def _adam_to_adamw(self, call: cst.Call, *, keep_decay: bool) -> None:
        new_func, imports = self._adamw_func(call.func)

        # A user's fused=<expression> (``use_fused = device.type == "cuda"``) is their choice: kept,
        # and NRN101 ports the device test it reads; AdamW then has the kernel Adam lacks on Neuron.
        chosen = keyword(call, "fused") is not None and literal_bool(_value(call, "fused")) is None

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            call = drop_keyword(updated, "decoupled_weight_decay")
            if chosen:
                call = drop_keyword(call, "foreach").with_changes(func=new_func(call.func))
                return call if keep_decay or weight_decay_of(call) is not None else set_keyword_keep_layout(call, "weight_decay", cst.Float("0.0"))
            return fused_adamw(drop_keyword(call, "fused").with_changes(func=new_func(call.func)), decay_default=True)

        message = (
            "Adam(decoupled_weight_decay=True) -> AdamW(fused=True) (same update)"
            if keep_decay
            else "Adam without weight decay -> AdamW(weight_decay=0.0, fused=True) (identical update)"
        )
        if chosen:
            message = "Adam -> AdamW (identical update), the user's fused= kept (Neuron has _fused_adamw_, not _fused_adam_)"
        self.replace(call, transform, message, code="NRN502", imports=imports)

    def _adamw_func(self, func: cst.BaseExpression) -> tuple[Callable[[cst.BaseExpression], cst.BaseExpression], tuple[ImportSpec, ...]]:
        """How to spell AdamW where the file spells Adam, and the import that needs."""
        text = dotted(func) or ""
        if isinstance(func, cst.Attribute) and not text.endswith("adam.Adam"):
            return (lambda f: f.with_changes(attr=cst.Name("AdamW")) if isinstance(f, cst.Attribute) else f), ()
        if isinstance(func, cst.Name) and func.value == "Adam":
            self.drop_import_if_unused(ImportSpec("torch.optim", "Adam"), code="NRN502")
            self.drop_import_if_unused(ImportSpec("torch.optim.adam", "Adam"), code="NRN502")
            return (lambda _f: cst.Name("AdamW")), (ImportSpec("torch.optim", "AdamW"),)
        if isinstance(func, cst.Name):
            self.drop_import_if_unused(ImportSpec("torch.optim", "Adam", func.value), code="NRN502")
            self.drop_import_if_unused(ImportSpec("torch.optim.adam", "Adam", func.value), code="NRN502")
        return (lambda _f: cst.parse_expression("torch.optim.AdamW")), (ImportSpec("torch"),)


def _value(call: cst.Call, name: str) -> cst.BaseExpression | None:
    arg = keyword(call, name)
    return arg.value if arg is not None else None


def _fused_dict(value: cst.BaseExpression) -> bool:
    """``dict(fused=True) if use_fused else dict()`` / ``{"fused": True}`` / ``dict()``: only fused/foreach keys."""
    if isinstance(value, cst.IfExp):
        return _fused_dict(value.body) and _fused_dict(value.orelse)
    if isinstance(value, cst.Call) and dotted(value.func) == "dict":
        return all(arg.keyword is not None and arg.keyword.value in _FUSED_KEYS for arg in value.args)
    if isinstance(value, cst.Dict):
        return all(
            isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and e.key.evaluated_value in _FUSED_KEYS
            for e in value.elements
        )
    return False


def _mutated(module: cst.Module, name: str) -> bool:
    """Whether the file adds keys to the dict ``name`` other than fused/foreach (``d["x"] = ...``,
    ``d.update(...)``, ``d.setdefault(...)``): then ``**name`` may hold more than fused."""
    for node in m.findall(module, m.Subscript(value=m.Name(name)) | m.Call(func=m.Attribute(value=m.Name(name)))):
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in {"update", "setdefault", "__setitem__"}:
                return True
            continue
        assert isinstance(node, cst.Subscript)
        key = node.slice[0].slice if len(node.slice) == 1 else None
        if not (isinstance(key, cst.Index) and string_value(key.value) in _FUSED_KEYS):
            return True
    return False


def _mentions_weight_decay(value: cst.BaseExpression) -> bool:
    """Whether parameter groups built by ``value`` may set their own ``weight_decay``."""
    if isinstance(value, (cst.List, cst.Tuple)) and not value.elements:
        return True  # filled elsewhere (groups.append({...})): not in view
    for node in m.findall(value, m.DictElement() | m.Arg()):
        if isinstance(node, cst.DictElement) and string_value(node.key) == "weight_decay":
            return True
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "weight_decay":
            return True
    return False
