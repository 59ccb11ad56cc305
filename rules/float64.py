"""NRN721/NRN722: float64 values that reach the Neuron device."""

from __future__ import annotations

import ast
import re
from typing import ClassVar

import libcst as cst

from porter.engine.astcheck import SourceFacts
from porter.engine.astcheck import keyword as ast_keyword
from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import keyword, positional
from porter.rules._lib.device import cuda_string, device_named
from porter.rules._lib.nodes import dotted, method_name, string_value
from porter.rules._lib.tree import child_index

_FLOAT64 = ("torch.float64", "torch.double")
_FLOAT64_NAMES = frozenset({"double", "float64", "from_numpy"})
_FLOAT64_SET = frozenset(_FLOAT64)
_DEVICE_METHODS = frozenset({"cuda", "neuron"})
_NUMPY_FLOAT64 = ("numpy.float64", "numpy.double")
_RANDOM_FLOATS = ("numpy.random.rand", "numpy.random.randn", "numpy.random.random", "numpy.random.normal", "numpy.random.uniform", "numpy.linspace")
_NEURON = re.compile(r"^neuron(:\d+)?$")


class Float64OnDevice(Rule):
    """Keep float64 off the Neuron device.

    What it does:
        Where a float64 value is placed on the device — ``x.double().to(device)``,
        ``torch.tensor(..., dtype=torch.float64, device=device)``,
        ``t.to(device, torch.float64)``, ``torch.from_numpy(<float64 array>).to(device)`` (an array
        made by ``np.random.rand``/``randn``/``normal``/``uniform``/``linspace`` or
        ``.astype(np.float64)``) — the dtype becomes float32 (``.float()``, ``torch.float32``).
        ``torch.set_default_dtype(torch.float64)`` becomes float32 (every tensor the script makes,
        the model included, would be float64). Other float64 uses in a ported file (``.double()``
        or ``dtype=torch.float64`` with no device in view) get an NRN722 review marker.

    Why:
        Trainium has no native float64: TorchNeuron casts 64-bit values to 32 bits internally and
        back (torch-neuronx source, csrc/amp/autocast_mode.cpp; PyTorch AMP docs: "float64 and int64 are not natively supported"), which costs conversions
        and loses precision silently. Writing float32 says what actually happens.

    Before:
        t = torch.tensor([count, total], dtype=torch.float64, device="cuda")
        x = torch.from_numpy(np.random.randn(8, 4)).to(device)

    After:
        t = torch.tensor([count, total], dtype=torch.float32, device="neuron")
        x = torch.from_numpy(np.random.randn(8, 4)).float().to(device)

    Safety:
        Review: values are float32 (about 7 significant digits). Sums of large counts
        (> 2**24) lose exactness: keep those on the CPU. "Reaches the device" is decided in the
        expression itself (a ``device=`` keyword, a ``.to(<device>)``/``.cuda()`` in the same
        chain); a float64 tensor moved on a later line gets only the marker. A model's
        ``.double()`` that goes to the device stays float64 with an NRN722 marker when its
        function also makes float64 values this rule leaves (``dtype = torch.float64``, a host
        ``.double()``): a float32 model fed float64 data fails at its first matmul. A device is a
        CUDA or Neuron string, a device-named value, ``torch.device(...)``, or an expression built
        on ``torch.accelerator.current_accelerator()`` (the ``--style accelerator`` port of
        ``"cuda"``, so one pass and the rules one by one agree).
    """

    code: ClassVar[str] = "NRN721"
    name: ClassVar[str] = "float64-on-device"
    summary: ClassVar[str] = "float64 placed on the device (.double(), dtype=torch.float64, from_numpy) -> float32"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("float64", "double", "from_numpy")
    trigger_pattern: ClassVar[str] = r"float64|\bdouble\b|from_numpy"
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN722": "float64 in a ported file with no device in view: review marker",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 70

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """Every edit is made from ``visit_Call``: a ``.double()`` call with no argument, a call
        of ``torch.from_numpy``, or a call given a value whose qualified name is in _FLOAT64 as
        ``torch.set_default_dtype``'s first argument, as ``dtype=``, or positionally to
        ``.to``/``.type`` (``_dtype_argument``; any positional argument is looked at here). The
        qualified names are the imports' (``SourceFacts.import_names``)."""
        if not facts.identifiers & _FLOAT64_NAMES:
            return False
        for call in facts.of(ast.Call):
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "double" and not call.args and not call.keywords:
                return True
            if "torch.from_numpy" in facts.import_names(func):
                return True
            dtype = ast_keyword(call, "dtype")
            values = [*call.args, *([dtype.value] if dtype is not None else [])]
            if any(facts.import_names(value) & _FLOAT64_SET for value in values):
                return True
        return False

    # ----------------------------------------------------------------- the device in view
    def _device_expr(self, node: cst.BaseExpression) -> bool:
        return cuda_string(node) or bool(_NEURON.match(string_value(node) or "")) or device_named(node) or (
            isinstance(node, cst.Call) and self.matches(node.func, "torch.device")
        ) or self._accelerator_device(node)

    def _accelerator_device(self, node: cst.BaseExpression) -> bool:
        """The device as ``--style accelerator`` writes it (NRN101/NRN102): an expression built
        on ``torch.accelerator.current_accelerator()`` (``.type``, ``f"{...type}:{rank}"``)."""
        return any(
            isinstance(inner, cst.Call) and self.matches(inner.func, "torch.accelerator.current_accelerator")
            for inner in child_index(self).walk(node)
        )

    def _moves_to_device(self, call: cst.Call) -> bool:
        """``x.to(device...)`` / ``x.cuda()`` / ``x.neuron()`` / ``x.to(device="cuda")``."""
        name = method_name(call)
        if name in _DEVICE_METHODS:
            return True
        if name == "to":
            first = positional(call, 0)
            kw = keyword(call, "device")
            return (first is not None and self._device_expr(first.value)) or (kw is not None and self._device_expr(kw.value))
        return False

    def _chain_reaches_device(self, node: cst.CSTNode) -> bool:
        """Whether a call further out in the same method chain moves the value to the device."""
        current = node
        parent = self.parent(current)
        while isinstance(parent, cst.Attribute) and parent.value is current:
            call = self.parent(parent)
            if not isinstance(call, cst.Call):
                return False
            if self._moves_to_device(call):
                return True
            current, parent = call, self.parent(call)
        return False

    def _chain_below_reaches_device(self, call: cst.Call) -> bool:
        """``x.to(device).double()``: a device move earlier in the chain."""
        current: cst.CSTNode = call
        while isinstance(current, cst.Call) and isinstance(current.func, cst.Attribute):
            inner = current.func.value
            if isinstance(inner, cst.Call) and self._moves_to_device(inner):
                return True
            current = inner
        return False

    def _is_float64(self, node: cst.BaseExpression) -> bool:
        return self.matches(node, *_FLOAT64)

    # ----------------------------------------------------------------- visitors
    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) == "double" and not node.args:
            self._double(node)
        elif self.matches(node.func, "torch.set_default_dtype"):
            first = positional(node, 0)
            if first is not None and self._is_float64(first.value):
                self._to_float32(first.value, "set_default_dtype(float64) -> float32 (no native float64 on Trainium)")
        elif self.matches(node.func, "torch.from_numpy"):
            self._from_numpy(node)
        else:
            self._dtype_argument(node)

    def _double(self, call: cst.Call) -> None:
        if self._chain_reaches_device(call) or self._chain_below_reaches_device(call):
            kept = self._float64_beside(call)
            if kept is not None:
                self.mark(
                    call,
                    f"float64 kept: this function also makes float64 values ({kept}), and a float32 model fed "
                    "float64 data fails at its first matmul; float64 is not native on Neuron: port the model and "
                    "its data to float32 together, or keep this pipeline on the CPU",
                    code="NRN722",
                )
                return
            assert isinstance(call.func, cst.Attribute)
            self.replace(call.func.attr, cst.Name("float"), ".double() -> .float(): the value goes to the device (no native float64)")
            return
        self.mark(call, ".double() is float64: not native on Trainium (cast to 32-bit internally); use .float() on the device", code="NRN722")

    def _float64_beside(self, model: cst.Call) -> str | None:
        """A float64 value the function of ``model`` (a ``.double()`` going to the device) makes
        that this rule leaves float64 — a ``torch.float64`` outside a call with a device in view
        (``dtype = torch.float64``), or another ``.double()`` that stays on the host — as
        ``code (line N)``; None when there is none (the model can become float32 alone)."""
        function = next((a for a in self.ancestors(model) if isinstance(a, cst.FunctionDef)), None)
        if function is None:
            return None
        for inner in child_index(self).walk(function.body):
            if inner is model:
                continue
            if isinstance(inner, cst.Call) and method_name(inner) == "double" and not inner.args:
                if not (self._chain_reaches_device(inner) or self._chain_below_reaches_device(inner)):
                    return f"{self.context.module.code_for_node(inner)[:80]}, line {self.position(inner)[0]}"
            elif isinstance(inner, (cst.Attribute, cst.Name)) and self._is_float64(inner):
                arg = self.parent(inner)
                owner = self.parent(arg) if isinstance(arg, cst.Arg) else None
                if isinstance(owner, cst.Call) and self._on_device(owner):
                    continue  # made float32 with the model
                first = self.context.module.code_for_node(self.statement_of(inner)).strip().splitlines()[0]
                return f"{first[:80]}, line {self.position(inner)[0]}"
        return None

    def _on_device(self, call: cst.Call) -> bool:
        """The value ``call`` makes goes to the device in this expression."""
        device = keyword(call, "device")
        return (
            (device is not None and self._device_expr(device.value))
            or self._moves_to_device(call)
            or self._chain_reaches_device(call)
            or self._chain_below_reaches_device(call)
        )

    def _dtype_argument(self, call: cst.Call) -> None:
        dtype = keyword(call, "dtype")
        candidates = [dtype] if dtype is not None else []
        if method_name(call) in {"to", "type"}:
            candidates += [arg for arg in call.args if arg.keyword is None]
        for arg in candidates:
            if arg is None or not self._is_float64(arg.value):
                continue
            if self._on_device(call):
                self._to_float32(arg.value, "float64 on the device -> float32 (no native float64 on Trainium)")
            else:
                self.mark(call, "float64 tensor: not native on Trainium (cast to 32-bit internally); use float32 if it reaches the device", code="NRN722")
            return

    def _float32_like(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """``torch.float64`` / ``th.double`` -> ``torch.float32`` / ``th.float32`` (the file's spelling)."""
        text = dotted(node) or "torch.float64"
        head = text.rsplit(".", 1)[0] if "." in text else None
        if head is None:
            return cst.Name("float32")  # from torch import float64: imported by _to_float32
        return cst.parse_expression(f"{head}.float32")

    def _to_float32(self, node: cst.BaseExpression, message: str) -> None:
        imports: tuple[ImportSpec, ...] = ()
        if isinstance(node, cst.Name):
            imports = (ImportSpec("torch", "float32"),)
            self.drop_import_if_unused(ImportSpec("torch", node.value))
        self.replace(node, self._float32_like(node), message, imports=imports)

    def _from_numpy(self, call: cst.Call) -> None:
        array = positional(call, 0)
        if array is None or not self._chain_reaches_device(call) or self._chain_casts(call):
            return
        if not self._float64_array(array.value):
            return

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            return cst.Call(func=cst.Attribute(value=updated, attr=cst.Name("float")))

        self.replace(call, transform, "torch.from_numpy(float64 array) -> .float() before it goes to the device")

    def _chain_casts(self, call: cst.Call) -> bool:
        current: cst.CSTNode = call
        parent = self.parent(current)
        while isinstance(parent, cst.Attribute) and parent.value is current:
            outer = self.parent(parent)
            if not isinstance(outer, cst.Call):
                return False
            if parent.attr.value in {"float", "half", "bfloat16", "long", "int", "bool"} or keyword(outer, "dtype") is not None:
                return True
            if parent.attr.value == "to" and any(
                arg.keyword is None and (dotted(arg.value) or "").split(".")[-1].startswith(("float", "bfloat", "int", "long", "half"))
                for arg in outer.args
            ):
                return True
            current, parent = outer, self.parent(outer)
        return False

    def _float64_array(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call):
            if method_name(node) == "astype":
                first = positional(node, 0)
                return first is not None and (
                    self.matches(first.value, *_NUMPY_FLOAT64) or string_value(first.value) in {"float64", "double"}
                    or (isinstance(first.value, cst.Name) and first.value.value == "float")
                )
            return self.matches(node.func, *_RANDOM_FLOATS)
        if isinstance(node, cst.Name):
            for ancestor in self.ancestors(node):
                if isinstance(ancestor, (cst.FunctionDef, cst.Module)):
                    return self._assigned_float64(ancestor, node.value)
        return False

    def _assigned_float64(self, scope: cst.CSTNode, name: str) -> bool:
        body = scope.body.body if isinstance(scope, cst.FunctionDef) and isinstance(scope.body, cst.IndentedBlock) else getattr(scope, "body", [])
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if (
                        isinstance(small, cst.Assign)
                        and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        and small.targets[0].target.value == name
                        and isinstance(small.value, cst.Call)
                    ):
                        return self._float64_array(small.value)
        return False
