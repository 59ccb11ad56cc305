"""NRN901-NRN912: CUDA-only libraries and kernels get a review marker naming the replacement."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.nodes import dotted
from porter.rules._lib.precision import ACCELERATOR_DEVICE_TYPE
from porter.rules._tables.cuda_only import (
    CODES,
    CUDA_SDPA_BACKENDS,
    NVIDIA_SMI,
    NVIDIA_SMI_MESSAGE,
    SHELL_CALLS,
    VERSION_CUDA,
    VERSION_CUDA_MESSAGE,
    Entry,
    entry_for,
    triggers,
)


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
        ``torch.utils.cpp_extension.load``/``load_inline``/``CUDAExtension`` (their ``.cu``
        sources); NRN907 ``torch.backends.cuda.sdp_kernel`` and ``torch.nn.attention.sdpa_kernel``
        naming a CUDA backend (flash, efficient, cuDNN); NRN908 other CUDA-only libraries (CuPy,
        PyCUDA, numba.cuda, NVML/``pynvml``/``nvidia_smi``, GPUtil, Transformer Engine, Liger,
        mamba_ssm, causal_conv1d, FlashInfer, TensorRT, DALI); NRN909 Hub kernels
        (``kernels.get_kernel``); NRN910 FP8 ``torch._scaled_mm``; NRN911 ``nvidia-smi`` run from
        Python (``subprocess.*``, ``os.system``/``os.popen``: a string argument naming it); NRN912
        ``torch.version.cuda`` in a test (an ``if``/``while``/ternary/assert condition, or a
        comparison or boolean expression kept in a flag). Triton (NRN904) is marked on its import,
        once per block (``import triton`` covers ``import triton.language as tl`` below it), and on
        each kernel definition. The list lives in ``rules/_tables/cuda_only.py``; the post-port
        verifier (``porter/engine/verify.py``) reads the same table and reports any of these left
        without a marker. bitsandbytes and apex optimizers are ported by NRN511/NRN512.

    Why:
        These libraries ship CUDA (or Triton) kernels; none runs on Trainium, where TorchNeuron
        lowers torch ops through its own compiler and decomposes SDPA itself. The replacement is
        a design decision (tensor layouts differ: flash_attn and xformers take (batch, seq,
        heads, dim), SDPA (batch, heads, seq, dim)), so porter explains it instead of guessing.
        Where the marker goes: on the import when it names the library part to replace (one
        marker however often the names are used; guarded ``try: import flash_attn`` blocks
        included); on each use when only the top-level package is imported (``import apex`` then
        ``apex.amp.initialize(...)``); on the call for extension loads and SDPA backend selection
        (the call holds the sources/backends); on the kernel definition for Triton. A
        ``torch.version.cuda`` test is False on Neuron (the attribute is None), so whatever it
        gates silently changes; printing it changes nothing and is left alone.

    Before:
        from flash_attn import flash_attn_func
        from apex.normalization import FusedLayerNorm

    After:
        # porter: NRN902 flash_attn is CUDA-only: use F.scaled_dot_product_attention(q, k, v, is_causal=...) with (batch, heads, seq, dim) tensors
        from flash_attn import flash_attn_func
        # porter: NRN901 apex FusedLayerNorm is CUDA-only: use torch.nn.LayerNorm (same arguments)
        from apex.normalization import FusedLayerNorm

    Safety:
        Review markers only; code is never changed, and markers are idempotent. With ``--style
        accelerator`` the advice names the device-generic forms that style writes
        (``torch.autocast(device_type=torch.accelerator.current_accelerator().type, ...)``, the
        accelerator's default process-group backend, ``torch.compile()`` with its backend
        auto-selected, ``torch.accelerator.device_count()``) instead of "neuron" ones (a statement that
        already carries the code's marker is left alone). Names are matched by qualified name, so
        aliases (``import xformers.ops as xops``) are covered; a library reached through
        ``importlib.import_module("...")`` or a string config (HF ``attn_implementation=``) is not
        seen here. ``sdpa_kernel`` is marked only when its arguments name a CUDA backend
        (``SDPBackend.MATH`` alone is fine everywhere). What a name holds: the callee of a shell
        call is resolved by qualified name (``import subprocess as sp``), the command only from
        string literals and f-string text in its arguments (a command built in a variable
        elsewhere is not seen); a local function named ``get_kernel``/``_scaled_mm`` is not the
        library's.
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
        self._marked_blocks: set[tuple[int, str, str]] = set()  # (block, code, prefix) with an import marked

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
        # One marker per library and block: `import triton` covers `import triton.language as tl` below it.
        block = (id(self.parent(self.statement_of(node))), entry.code, entry.prefix)
        if block in self._marked_blocks:
            return
        self._marked_blocks.add(block)
        self._mark_once(node, entry)

    # ------------------------------------------------------------------ uses of a package imported whole
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.matches(node, VERSION_CUDA):
            if self._gates(node):
                self._mark_once(node, Entry("NRN912", VERSION_CUDA, VERSION_CUDA_MESSAGE, where="test"))
            return
        self._use(node)

    def _gates(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is part of a test: an if/while/ternary/assert condition, or a
        comparison or boolean expression (a flag computed from it)."""
        child = node
        for parent in self.ancestors(node):
            if isinstance(parent, (cst.Comparison, cst.BooleanOperation)):
                return True
            if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
                return True
            if isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Assert)):
                return child is parent.test
            if isinstance(parent, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return False
            child = parent
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self._use(node)

    def _use(self, node: cst.Attribute | cst.Name) -> None:
        parent = self.parent(node)
        if type(parent) is cst.Attribute and (parent.value is node or parent.attr is node):  # type: ignore[union-attr]  # exact type: every name
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
        if self.qualified(node.func) & SHELL_CALLS and self._runs_nvidia_smi(node):
            self._mark_once(node, Entry("NRN911", NVIDIA_SMI, NVIDIA_SMI_MESSAGE, where="call"))
            return
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

    def _runs_nvidia_smi(self, call: cst.Call) -> bool:
        tree = self.context.tree
        assert tree is not None
        for arg in call.args:
            for node in tree.walk(arg):
                text = node.value if isinstance(node, (cst.SimpleString, cst.FormattedStringText)) else ""
                if NVIDIA_SMI in text:
                    return True
        return False

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
        self.mark(node, accelerator_words(entry.message) if self.options.style == "accelerator" else entry.message, code=entry.code)


# --style accelerator writes device-generic code (autocast's device type, the distributed default
# backend, torch.compile's auto-selected backend): the markers' advice names the same forms.
_ACCELERATOR_WORDS = (
    ('torch.autocast(device_type="neuron", ', f"torch.autocast(device_type={ACCELERATOR_DEVICE_TYPE}, "),
    ('torch.autocast("neuron", ', f"torch.autocast({ACCELERATOR_DEVICE_TYPE}, "),
    ('with backend "neuron"', "with the accelerator's default backend (torch.distributed.get_default_backend_for_device)"),
    ('torch.compile(backend="neuron")', "torch.compile() (its backend auto-selected for the accelerator)"),
    ("on the neuron device", "on the accelerator (torch.accelerator.current_accelerator())"),
    ("torch.neuron.device_count()", "torch.accelerator.device_count()"),
)


def accelerator_words(message: str) -> str:
    """A marker's advice in the forms ``--style accelerator`` writes."""
    for neuron, generic in _ACCELERATOR_WORDS:
        message = message.replace(neuron, generic)
    return message


def _asname(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None
