"""NRN901-NRN908: CUDA-only libraries and kernels get a review marker naming the replacement."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._tables.cuda_only import CODES, CUDA_SDPA_BACKENDS, Entry, entry_for, triggers
from porter.rules._lib.nodes import dotted


class CudaOnlyDeps(Rule):
    """Mark CUDA-only libraries and kernels with the torch replacement to use on Neuron.

    What it does:
        Adds one review marker (``# porter: NRN9xx ...``) per construct, code unchanged:
        NRN901 apex (``apex.amp``, ``FusedLayerNorm``/``FusedRMSNorm`` → ``torch.nn.LayerNorm``/
        ``RMSNorm``, ``apex.parallel`` → torch DDP/SyncBatchNorm; ``apex.optimizers`` belong to the
        optimizer rules); NRN902 ``flash_attn`` and NRN903 ``xformers`` →
        ``F.scaled_dot_product_attention``; NRN904 Triton kernels (``@triton.jit``,
        ``@triton.autotune``); NRN905 bitsandbytes quantized layers and ``BitsAndBytesConfig``
        (``bitsandbytes.optim`` belongs to the optimizer rules); NRN906
        ``torch.utils.cpp_extension.load``/``load_inline``/``CUDAExtension``; NRN907
        ``torch.backends.cuda.sdp_kernel`` and ``torch.nn.attention.sdpa_kernel`` naming a CUDA
        backend (flash, efficient, cuDNN); NRN908 other CUDA-only libraries (CuPy, PyCUDA,
        numba.cuda, NVML, Transformer Engine, Liger, mamba_ssm, causal_conv1d, FlashInfer,
        TensorRT, DALI). The list lives in ``rules/_tables/cuda_only.py``.

    Why:
        These libraries ship CUDA (or Triton) kernels; none runs on Trainium, where TorchNeuron
        lowers torch ops through its own compiler and decomposes SDPA itself. The replacement is
        a design decision (tensor layouts differ: flash_attn and xformers take (batch, seq,
        heads, dim), SDPA (batch, heads, seq, dim)), so porter explains it instead of guessing.
        Where the marker goes: on the import when it names the library part to replace (one
        marker however often the names are used; guarded ``try: import flash_attn`` blocks
        included); on each use when only the top-level package is imported (``import apex`` then
        ``apex.amp.initialize(...)``); on the call for extension loads and SDPA backend selection
        (the call holds the sources/backends); on the kernel definition for Triton.

    Before:
        from flash_attn import flash_attn_func
        from apex.normalization import FusedLayerNorm

    After:
        # porter: NRN902 flash_attn is CUDA-only: use F.scaled_dot_product_attention(q, k, v, is_causal=...) with (batch, heads, seq, dim) tensors
        from flash_attn import flash_attn_func
        # porter: NRN901 apex FusedLayerNorm is CUDA-only: use torch.nn.LayerNorm (same arguments)
        from apex.normalization import FusedLayerNorm

    Safety:
        Review markers only; code is never changed, and markers are idempotent (a statement that
        already carries the code's marker is left alone). Names are matched by qualified name, so
        aliases (``import xformers.ops as xops``) are covered; a library reached through
        ``importlib.import_module("...")`` or a string config (HF ``attn_implementation=``) is not
        seen here. ``sdpa_kernel`` is marked only when its arguments name a CUDA backend
        (``SDPBackend.MATH`` alone is fine everywhere).
    """

    code: ClassVar[str] = "NRN901"
    name: ClassVar[str] = "cuda-only-deps"
    summary: ClassVar[str] = CODES["NRN901"]
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = triggers()
    extra_codes: ClassVar[dict[str, str]] = {code: text for code, text in CODES.items() if code != "NRN901"}
    order: ClassVar[int] = 90

    def visit_Module(self, node: cst.Module) -> None:
        self._marked: set[tuple[int, str]] = set()
        self._covered_locals: set[str] = set()  # names bound by an import that got its marker

    # ------------------------------------------------------------------ imports
    # (A batched visitor cannot skip children: names inside imports have no qualified name, so
    # the use visitors below never see them as uses.)
    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            full = dotted(alias.name)
            if full:
                local = _asname(alias) or full.split(".")[0]
                self._import(node, full, local)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return False
        module = dotted(node.module)
        if not module:
            return False
        imported = [(f"{module}.{dotted(alias.name)}", _asname(alias) or dotted(alias.name) or "") for alias in node.names]
        entries = {entry_for(full, "import") for full, _ in imported} - {None}
        general = entry_for(module, "import")
        for full, local in imported:
            # Several names with different advice (FusedLayerNorm, FusedRMSNorm): the module's advice.
            self._import(node, full, local, general if len(entries) > 1 else None)
        return False

    def _import(self, node: cst.CSTNode, full: str, local: str, instead: Entry | None = None) -> None:
        entry = entry_for(full, "import")
        if entry is not None and instead is not None and instead.code == entry.code:
            entry = instead
        if entry is None or any(e == full or e.startswith(full + ".") for e in entry.exclude):
            return  # not CUDA-only, or only its uses say which part is used (import apex)
        self._covered_locals.add(local)
        self._mark_once(node, entry)

    # ------------------------------------------------------------------ uses of a package imported whole
    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._use(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._use(node)

    def _use(self, node: cst.Attribute | cst.Name) -> None:
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node):
            return
        head = (dotted(node) or "").split(".")[0]
        if not head or head in self._covered_locals:
            return
        for name in self.imported(node):  # `apex = "apex"` is a local, not the package
            entry = entry_for(name, "import")
            if entry is not None:
                self._mark_once(node, entry)
                return

    # ------------------------------------------------------------------ calls and kernels
    def visit_Call(self, node: cst.Call) -> None:
        for name in self.qualified(node.func):
            entry = entry_for(name, "call")
            if entry is None:
                continue
            if entry.prefix == "torch.nn.attention.sdpa_kernel":
                text = self.context.module.code_for_node(node)
                if not any(backend in text for backend in CUDA_SDPA_BACKENDS):
                    return
            self._mark_once(node, entry)
            return

    def visit_Decorator(self, node: cst.Decorator) -> None:
        target = node.decorator.func if isinstance(node.decorator, cst.Call) else node.decorator
        for name in self.qualified(target):
            entry = entry_for(name, "decorator")
            if entry is not None:
                self._mark_once(node, entry)
                return

    def _mark_once(self, node: cst.CSTNode, entry: Entry) -> None:
        key = (id(self.statement_of(node)), entry.code)
        if key in self._marked:
            return
        self._marked.add(key)
        self.mark(node, entry.message, code=entry.code)


def _asname(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None
