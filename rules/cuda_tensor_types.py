"""NRN107: legacy ``torch.cuda.*Tensor`` types (default tensor type, constructors, ``.type()``)."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import positional
from porter.rules._lib.device import torch_import
from porter.rules._lib.nodes import dotted, method_name, string_value
from porter.rules._lib.tree import child_index
from porter.rules._tables.cuda import FLOATING_TENSOR_TYPES, TENSOR_TYPES

_PREFIX = "torch.cuda."
_CPU_TYPES = frozenset(f"torch.{kind}" for kind in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor"))
_NEURON = '"neuron"'
_ACCELERATOR = "torch.accelerator.current_accelerator()"


def _torch_prefix(text: str | None) -> str | None:
    """``th.cuda.FloatTensor`` -> ``th``; ``th.set_default_tensor_type`` -> ``th``; else None."""
    parts = (text or "").split(".")
    if "cuda" in parts[1:]:
        return ".".join(parts[: parts.index("cuda", 1)])
    if len(parts) == 2:
        return parts[0]
    return None


class CudaTensorTypes(Rule):
    """Port the legacy CUDA tensor-type API.

    What it does:
        ``torch.set_default_tensor_type("torch.cuda.FloatTensor")`` (string or class) →
        ``torch.set_default_device("neuron")``; for ``Double``/``Half``/``BFloat16`` it also sets
        the default dtype (``torch.set_default_dtype(torch.float64)``). Constructors:
        ``torch.cuda.FloatTensor(2, 3)`` → ``torch.empty(2, 3, dtype=torch.float32,
        device="neuron")``, ``torch.cuda.LongTensor([1, 2])`` → ``torch.tensor([1, 2],
        dtype=torch.int64, device="neuron")``; ``x.type(torch.cuda.FloatTensor)`` →
        ``x.to(device="neuron", dtype=torch.float32)``. Any other use (``isinstance`` checks, a
        constructor whose single argument may be data or a size) gets a review marker (NRN107 as
        a marker). ``--style accelerator`` writes ``torch.accelerator.current_accelerator()``
        for the device.

    Why:
        The typed-tensor classes are CUDA-specific and deprecated; on Trainium they raise. The
        device-generic spellings are ``set_default_device`` + ``set_default_dtype`` and factory
        functions with ``dtype=``/``device=`` (torch-neuronx source, csrc/core/NeuronDevice.cpp and distributed/backend.py: the device type is ``neuron``).

    Before:
        torch.set_default_tensor_type("torch.cuda.FloatTensor")
        mask = torch.cuda.ByteTensor(batch, seq).fill_(0)
        ids = torch.cuda.LongTensor([0, 1, 2])
        h = h.type(torch.cuda.HalfTensor)

    After:
        torch.set_default_device("neuron")
        mask = torch.empty(batch, seq, dtype=torch.uint8, device="neuron").fill_(0)
        ids = torch.tensor([0, 1, 2], dtype=torch.int64, device="neuron")
        h = h.to(device="neuron", dtype=torch.float16)

    Safety:
        Safe for the forms above. A single non-literal argument (``torch.cuda.FloatTensor(n)``)
        is a size if it is an int and data if it is a list: it is marked, not guessed.
        ``set_default_tensor_type`` for integer types is marked (PyTorch has no integer default
        dtype). In a file that sets a CUDA default type, a later ``set_default_tensor_type(
        torch.FloatTensor)`` (or another CPU floating type, class or string) is the original's
        reset: it only resets the dtype, so ``torch.set_default_device("cpu")`` is inserted
        after it (the pair is ported as a pair). Name heuristic: tensor types are matched by
        qualified name or by the exact strings ``"torch.cuda.X"``/``"torch.X"``.
    """

    code: ClassVar[str] = "NRN107"
    name: ClassVar[str] = "cuda-tensor-types"
    summary: ClassVar[str] = 'torch.cuda.FloatTensor & co. -> factory calls with dtype=/device="neuron"'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("cuda",)  # every CUDA tensor type is spelled torch.cuda.*
    order: ClassVar[int] = 20

    def visit_Module(self, node: cst.Module) -> None:
        self._handled: set[int] = set()

    @property
    def _device(self) -> str:
        return _ACCELERATOR if self.options.style == "accelerator" else _NEURON

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, "torch.set_default_tensor_type"):
            self._default_tensor_type(node)
            return
        kind = self._tensor_type(node.func)
        if kind is not None:
            self._handled.add(id(node.func))
            self._constructor(node, kind)
            return
        if method_name(node) == "type" and len(node.args) == 1:
            arg = node.args[0]
            kind = self._tensor_type(arg.value) if arg.keyword is None or arg.keyword.value == "dtype" else None
            if kind is not None:
                self._handled.add(id(arg.value))
                self._type_call(node, kind)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return
        kind = self._tensor_type(node)
        if kind is None or id(node) in self._handled:
            return
        # The ancestor walk after the name check: for every attribute it was the rule's main cost.
        if any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in self.ancestors(node)):
            return
        self.mark(node, f"torch.cuda.{kind} is CUDA-only; use dtype={TENSOR_TYPES[kind]} and device checks")

    def _tensor_type(self, node: cst.CSTNode) -> str | None:
        for name in self.qualified(node):
            if name.startswith(_PREFIX) and name[len(_PREFIX) :] in TENSOR_TYPES:
                return name[len(_PREFIX) :]
        return None

    def _drop_import(self, node: cst.CSTNode, kind: str) -> None:
        """``from torch.cuda import FloatTensor`` / ``from torch import cuda`` once nothing uses them."""
        text = dotted(node) or ""
        if "." not in text:
            self.drop_import_if_unused(ImportSpec("torch.cuda", kind))
        elif text.startswith("cuda."):
            self.drop_import_if_unused(ImportSpec("torch", "cuda"))

    def _cuda_kind(self, node: cst.Call) -> str | None:
        """``set_default_tensor_type(torch.cuda.X)`` / ``("torch.cuda.X")``: X, else None."""
        arg = positional(node, 0)
        if arg is None:
            return None
        value = string_value(arg.value)
        kind = value[len(_PREFIX) :] if value and value.startswith(_PREFIX) else self._tensor_type(arg.value)
        return kind if kind in TENSOR_TYPES else None

    def _sets_cuda_default(self) -> bool:
        """The file sets a CUDA default tensor type somewhere (computed once)."""
        if not hasattr(self, "_cuda_default"):
            self._cuda_default = any(
                isinstance(inner, cst.Call)
                and self.matches(inner.func, "torch.set_default_tensor_type")
                and self._cuda_kind(inner) is not None
                for inner in child_index(self).walk(self.context.module)
            )
        return self._cuda_default

    def _cpu_reset(self, node: cst.Call) -> None:
        """``set_default_tensor_type(torch.FloatTensor)`` after a CUDA one: it resets the dtype but
        not the default *device* the port set, so the device is reset with it."""
        arg = positional(node, 0)
        if arg is None or not self._sets_cuda_default():
            return
        value = string_value(arg.value)
        cpu = value in _CPU_TYPES if value else any(name in _CPU_TYPES for name in self.qualified(arg.value))
        statement = self.statement_of(node)
        expr = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
        if not cpu or not isinstance(expr, cst.Expr) or expr.value is not node:
            return
        torch_name = _torch_prefix(dotted(node.func))
        imports = () if torch_name else torch_import(self.context.module)
        reset = cst.parse_statement(f'{torch_name or "torch"}.set_default_device("cpu")')
        message = "set_default_tensor_type(torch.FloatTensor) resets the dtype only: reset the default device too"
        self.insert_after(statement, [reset], message, imports=imports)

    def _default_tensor_type(self, node: cst.Call) -> None:
        kind = self._cuda_kind(node)
        if kind is None:
            self._cpu_reset(node)
            return
        arg = positional(node, 0)
        assert arg is not None
        self._handled.add(id(arg.value))
        if kind not in FLOATING_TENSOR_TYPES:
            self.mark(node, f"default tensor type torch.cuda.{kind}: only floating dtypes can be a default; port by hand")
            return
        statement = self.statement_of(node)
        expr = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
        if not isinstance(expr, cst.Expr) or expr.value is not node:
            self.mark(node, "set_default_tensor_type used as a value; use torch.set_default_device/set_default_dtype")
            return
        torch_name = _torch_prefix(dotted(node.func))
        imports = () if torch_name else torch_import(self.context.module)
        torch_name = torch_name or "torch"
        new: list[cst.BaseStatement] = []
        if kind != "FloatTensor":
            dtype = TENSOR_TYPES[kind].replace("torch.", f"{torch_name}.", 1)
            if dtype.endswith(".float16") and self.options.selects("NRN203"):
                dtype = f"{torch_name}.bfloat16"  # NRN203's fp16 -> bf16, done here so the port is a fixed point
            if dtype.endswith(".float64") and self.options.selects("NRN721"):
                # NRN721 ports a float64 default to float32 (no native float64 on Trainium); doing
                # it here too keeps the port a fixed point (a second run would change it).
                dtype = f"{torch_name}.float32"
            new.append(cst.parse_statement(f"{torch_name}.set_default_dtype({dtype})"))
        self.replace(
            node,
            cst.parse_expression(f"{torch_name}.set_default_device({self._device})"),
            f"set_default_tensor_type(torch.cuda.{kind}) -> set_default_device",
            imports=imports,
        )
        if new:
            self.insert_after(statement, new, None)

    def _constructor(self, node: cst.Call, kind: str) -> None:
        if any(arg.keyword is not None or arg.star for arg in node.args):
            self.mark(node, f"torch.cuda.{kind}(...) with keywords; use torch.empty/torch.tensor with dtype= and device=")
            return
        torch_name = _torch_prefix(dotted(node.func))
        imports = () if torch_name else torch_import(self.context.module)
        torch_name = torch_name or "torch"
        dtype = TENSOR_TYPES[kind].replace("torch.", f"{torch_name}.", 1)
        factory = self._factory(node)
        if factory is None:
            self.mark(node, f"torch.cuda.{kind}(x): size or data? use torch.empty/torch.tensor(dtype={dtype}, device=...)")
            return

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            text = ", ".join(self.context.module.code_for_node(arg.value) for arg in updated.args)
            args = f"{text}, " if text else "0, "
            return cst.parse_expression(f"{torch_name}.{factory}({args}dtype={dtype}, device={self._device})")

        message = f"torch.cuda.{kind}(...) -> torch.{factory}(..., dtype={TENSOR_TYPES[kind]}, device=...)"
        self.replace(node, transform, message, imports=imports)
        self._drop_import(node.func, kind)

    def _factory(self, node: cst.Call) -> str | None:
        """``empty`` for sizes, ``tensor`` for data, None when the file does not say which."""
        values = [arg.value for arg in node.args]
        if not values:
            return "empty"
        if len(values) == 1 and isinstance(values[0], (cst.List, cst.Tuple, cst.ListComp)):
            return "tensor"
        if len(values) > 1 or isinstance(values[0], cst.Integer):
            return "empty"
        if isinstance(values[0], cst.Call) and method_name(values[0]) == "size":
            return "empty"
        return None

    def _type_call(self, node: cst.Call, kind: str) -> None:
        arg = node.args[0].value
        torch_name = _torch_prefix(dotted(arg))
        imports = () if torch_name else torch_import(self.context.module)
        dtype = TENSOR_TYPES[kind].replace("torch.", f"{torch_name or 'torch'}.", 1)

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call) and isinstance(updated.func, cst.Attribute)
            receiver = self.context.module.code_for_node(updated.func.value)
            return cst.parse_expression(f"{receiver}.to(device={self._device}, dtype={dtype})")

        self.replace(node, transform, f".type(torch.cuda.{kind}) -> .to(device=..., dtype={TENSOR_TYPES[kind]})", imports=imports)
        self._drop_import(arg, kind)
