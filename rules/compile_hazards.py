"""NRN731-NRN740: constructs in model code that break graphs, re-shape them or fall back to the CPU."""

from __future__ import annotations

import re
from typing import ClassVar, cast

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.branches import in_kept_cuda_branch
from porter.rules._lib.nodes import dotted, method_name
from porter.rules._lib.tree import child_index
from porter.rules._tables.hazard import (
    ALL_HAZARDS,
    ATTRIBUTES,
    CONTROL,
    DATA_DEPENDENT_SHAPE,
    FORWARD_ONLY_METHODS,
    FUNCTIONS,
    METHODS,
    VALUE_METHODS,
    Hazard,
)

_MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")
_MODULE_LIKE = re.compile(r"(Module|PreTrainedModel|LightningModule)$")
_MASK_NAME = re.compile(r"(?i)mask")


class CompileHazards(Rule):
    """Mark model code that breaks, re-shapes or slows the compiled graph on Trainium.

    What it does:
        Adds review markers (code unchanged) with the static alternative. Inside ``forward`` of
        an ``nn.Module`` subclass: control flow on tensor values (``if x.sum() > 0``,
        ``if mask.any()``; NRN731), ``.item()``/``.tolist()`` (NRN732), ``nonzero``/
        ``masked_select``/``torch.where(cond)``/boolean-mask reads ``x[mask]`` (NRN733),
        ``unique`` (NRN734), ``expand``/``expand_as`` (NRN736), ``topk``/``histc``/``bincount``
        (NRN740). Anywhere in a ported file: complex tensors and ``torch.polar``/
        ``view_as_complex`` RoPE (NRN735), sparse tensors (NRN737), ``channels_last``
        (NRN738), the linalg ops TorchNeuron runs on the CPU (``qr``, ``svd``, ``eigh``,
        ``cholesky``, ``inv``, ``lu``, ``det``, ``triangular_solve``...; NRN739).

    Why:
        TorchNeuron compiles whole static graphs (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)): a value-dependent branch or a
        ``.item()`` is a graph break (an error under ``fullgraph=True``); an op whose output shape
        depends on the data (``nonzero``, boolean masks, ``unique``) recompiles per shape; complex
        numbers do not lower through torch-mlir (the Neuron Llama example uses real-valued RoPE);
        the Neuron examples replace ``expand`` with ``repeat`` and ``topk``/``histc`` with static
        alternatives, and support only contiguous tensors; the listed linalg ops are explicit
        CPU fallbacks (AWS Neuron docs, best practices (torch/reference/best-practices-pytorch-neuron)), each a host round trip.

    Before:
        def forward(self, x):
            keep = x[x > 0]
            if keep.sum() > 0:
                ...

    After:
        def forward(self, x):
            # porter: NRN733 data-dependent shape (nonzero/boolean mask): recompiles per shape; ...
            keep = x[x > 0]
            # porter: NRN731 control flow on tensor values in forward: a graph break ...; use torch.where
            if keep.sum() > 0:
                ...

    Safety:
        Review markers only. Modules are classes deriving (directly or through a class of this
        file) from ``torch.nn.Module`` or a base named like ``*Module``/``*PreTrainedModel``; only
        their ``forward`` is scanned for the forward-only hazards (helpers called from forward are
        missed). Methods are matched by name (``x.expand``), so a non-tensor object with such a
        method in ``forward`` is marked too. Boolean masks are recognised by a comparison or a
        name containing ``mask`` in the index; assignments through a mask (``x[mask] = 0``,
        static shape) are not marked. Whether ``expand`` really needs ``repeat`` (the view is
        written to, or made contiguous) is for the reviewer: read-only broadcasts are fine.
    """

    code: ClassVar[str] = "NRN731"
    name: ClassVar[str] = "compile-hazards"
    summary: ClassVar[str] = "graph breaks, data-dependent shapes, complex/sparse/channels_last, CPU-fallback linalg in model code: review markers"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = (
        "forward", "polar", "complex", "sparse", "channels_last", "linalg", "qr", "svd", "cholesky", "inverse", "det",
        "triangular_solve", "cfloat", "cdouble",
    )
    # The same, as names: a `def forward` (every forward-only hazard), or a hazard's own name.
    trigger_pattern: ClassVar[str] = (
        # One \b in front of the alternation: Python's re tries 16 alternatives at every position otherwise (5x slower).
        r"\b(?:def[\s\\]+forward\b|polar\b|complex|sparse(?:\b|_co|_cs)|qr\b|svd\b|cholesky|inverse\b|(?:s?log)?det\b|cfloat\b|cdouble\b)"
        r"|view_as_complex|to_sparse|channels_last|linalg|triangular_solve"
    )
    extra_codes: ClassVar[dict[str, str]] = {h.code: h.message.split(":")[0] for h in ALL_HAZARDS if h.code != "NRN731"}
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 80

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(context)
        self._modules: set[str] = set()

    def visit_Module(self, node: cst.Module) -> None:
        classes = cast("list[cst.ClassDef]", child_index(self).find(node, cst.ClassDef))  # the fixpoint needs no order
        changed = True
        while changed:  # a class deriving from a local Module subclass is one too
            changed = False
            for cls in classes:
                if cls.name.value not in self._modules and any(self._module_base(base.value) for base in cls.bases):
                    self._modules.add(cls.name.value)
                    changed = True

    def _module_base(self, base: cst.BaseExpression) -> bool:
        if self.matches(base, *_MODULE_BASES):
            return True
        text = dotted(base) or ""
        return text.split(".")[-1] in self._modules or bool(_MODULE_LIKE.search(text))

    def _in_forward(self, node: cst.CSTNode) -> bool:
        function: cst.FunctionDef | None = None
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef) and function is None:
                function = ancestor
            elif isinstance(ancestor, cst.ClassDef):
                return function is not None and function.name.value == "forward" and ancestor.name.value in self._modules
        return False

    def _flag(self, node: cst.CSTNode, hazard: Hazard) -> None:
        if hazard.where == "forward" and not self._in_forward(node):
            return
        if in_kept_cuda_branch(self, node):
            return  # runs only on CUDA: its device-type test is kept (rules/_lib/branches.py)
        self.mark(node, hazard.message, code=hazard.code)

    # ----------------------------------------------------------------- visitors
    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified(node.func)
        for name in qualified:
            if name in FUNCTIONS:
                self._flag(node, FUNCTIONS[name])
                return
            if name == "torch.where" and len(node.args) == 1:
                self._flag(node, DATA_DEPENDENT_SHAPE)
                return
        if any(name.startswith("torch.") for name in qualified):
            return
        method = method_name(node)
        hazard = METHODS.get(method or "")
        if hazard is None:
            return
        if method in FORWARD_ONLY_METHODS:
            hazard = hazard._replace(where="forward")
        self._flag(node, hazard)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return
        for name in self.qualified(node):
            if name in ATTRIBUTES:
                self._flag(node, ATTRIBUTES[name])
                return

    def visit_Subscript(self, node: cst.Subscript) -> None:
        parent = self.parent(node)
        if isinstance(parent, (cst.AssignTarget, cst.AugAssign)) or (isinstance(parent, cst.AnnAssign) and parent.target is node):
            return  # writes through a mask keep the shape
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index):
                continue
            value = index.value
            if isinstance(value, cst.Comparison) or (isinstance(value, cst.Name) and _MASK_NAME.search(value.value)):
                self._flag(node, DATA_DEPENDENT_SHAPE)
                return

    def visit_If(self, node: cst.If) -> None:
        self._control(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._control(node.test)

    def _control(self, test: cst.BaseExpression) -> None:
        for inner in child_index(self).walk(test):  # any order: one flag per test
            if not isinstance(inner, cst.Call):
                continue
            if self.matches(inner.func, "torch.any", "torch.all", "torch.isnan", "torch.equal", "torch.count_nonzero"):
                self._flag(test, CONTROL)
                return
            if method_name(inner) in VALUE_METHODS and isinstance(inner.func, cst.Attribute):
                receiver = dotted(inner.func.value) or ""
                if receiver.startswith("self.") and not inner.args and method_name(inner) in {"max", "min"}:
                    continue
                if isinstance(inner.func.value, (cst.List, cst.Tuple)) or receiver in {"math", "np", "numpy", "builtins"}:
                    continue
                self._flag(test, CONTROL)
                return
