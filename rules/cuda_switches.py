"""NRN112/NRN113: CUDA-only backend switches (cuDNN, TF32, matmul precision) are removed."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.nodes import dotted
from porter.rules._lib.statements import remove_small, single_small

# Assigned flags that only steer CUDA libraries: removing them changes nothing off CUDA.
_SAFE_FLAGS: dict[str, str] = {
    "torch.backends.cudnn.benchmark": "cuDNN autotuning is CUDA-only; neuronx-cc picks kernels at compile time",
    "torch.backends.cudnn.enabled": "cuDNN is CUDA-only; Neuron never uses it",
    "torch.backends.cudnn.allow_tf32": "cuDNN TF32 is CUDA-only; on Neuron fp32 stays fp32 unless autocast/bf16 is used",
    "torch.backends.cuda.matmul.allow_tf32": "cuBLAS TF32 is CUDA-only; on Neuron fp32 stays fp32 unless autocast/bf16 is used",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": "cuBLAS reduction switch, CUDA-only",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": "cuBLAS reduction switch, CUDA-only",
}
# Flags whose removal may change results a user relies on: removed as review changes.
_REVIEW_FLAGS: dict[str, str] = {
    "torch.backends.cudnn.deterministic": (
        "cuDNN determinism is CUDA-only; for determinism on Neuron use torch.use_deterministic_algorithms(True) "
        "and fixed seeds (review)"
    ),
}
_REVIEW_CALLS: dict[str, str] = {
    "torch.set_float32_matmul_precision": (
        "TF32 matmul precision is a CUDA (and CPU oneDNN) setting; Neuron keeps fp32 matmuls in fp32 unless "
        "autocast/bf16 is used (review: it also affected CPU runs)"
    ),
}
_BACKEND_MODULES = ("torch.backends.cudnn", "torch.backends.cuda")


class CudaSwitches(Rule):
    """Remove CUDA-only backend switches.

    What it does:
        Deletes assignments to ``torch.backends.cudnn.benchmark`` / ``.enabled`` /
        ``.allow_tf32`` and ``torch.backends.cuda.matmul.allow_tf32`` (and the two
        reduced-precision-reduction switches), each as an explained change (NRN112). Deletes
        ``torch.backends.cudnn.deterministic = ...`` and ``torch.set_float32_matmul_precision(...)``
        as review changes (NRN113). A block left empty gets ``pass``; ``import torch.backends.cudnn
        as cudnn`` is dropped once unused. With ``--style accelerator`` nothing is removed: the
        switches are inert off CUDA and still tune the script when it runs on a GPU.

    Why:
        These flags steer cuDNN and cuBLAS, which do not exist on Trainium. The torch-neuronx
        snapshot compiles with ``--auto-cast=none``, so fp32 stays fp32 unless autocast or bf16 is
        used; TF32 has no switch to carry over (torch-neuronx source, torch_neuronx/neuron.py; that the flags are inert off-CUDA is an
        inference, Neuron docs do not mention them). Determinism and matmul precision are kept for
        review because a user may rely on them: ``set_float32_matmul_precision`` also changes CPU
        (oneDNN) matmuls.

    Before:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        cudnn.benchmark = True
        torch.set_float32_matmul_precision("high")

    After:
        (all four lines removed)

    Safety:
        Safe for the CUDA library switches; review for ``cudnn.deterministic`` and
        ``set_float32_matmul_precision``. Only statements are removed: reading a flag
        (``if torch.backends.cudnn.benchmark:``) is left alone, and an assignment with several
        targets or a flag set inside a larger expression is left alone.
    """

    code: ClassVar[str] = "NRN112"
    name: ClassVar[str] = "cuda-switches"
    summary: ClassVar[str] = "cuDNN / TF32 backend switches removed (CUDA-only)"
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("cudnn", "allow_tf32", "reduced_precision_reduction", "set_float32_matmul_precision")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN113": "cudnn.deterministic / set_float32_matmul_precision removed (review)",
    }
    order: ClassVar[int] = 30

    def visit_Module(self, node: cst.Module) -> None:
        self._backend_imports: list[ImportSpec] = []

    def visit_Import(self, node: cst.Import) -> None:
        # ``import torch.backends.cudnn as cudnn``: dropped once the switches using it are gone.
        for alias in node.names:
            module = dotted(alias.name)
            if module in _BACKEND_MODULES and alias.asname and isinstance(alias.asname.name, cst.Name):
                self._backend_imports.append(ImportSpec(module, None, alias.asname.name.value))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        # ``from torch.backends import cudnn`` / ``cuda as cuda_backend``
        if node.module is None or dotted(node.module) != "torch.backends" or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted(alias.name)
            if name in ("cudnn", "cuda"):
                asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
                self._backend_imports.append(ImportSpec("torch.backends", name, asname))

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.options.style == "accelerator" or len(node.targets) != 1:
            return
        found = self._flag(node)
        if found is None:
            return
        code, message = found
        remove_small(
            self,
            node,
            self._removable,
            message,
            code=code,
            safety=Safety.REVIEW if code == "NRN113" else None,
        )
        for spec in self._backend_imports:
            self.drop_import_if_unused(spec, code=code)

    def visit_Expr(self, node: cst.Expr) -> None:
        if self.options.style == "accelerator":
            return
        found = self._call(node)
        if found is not None:
            remove_small(self, node, self._removable, found, code="NRN113", safety=Safety.REVIEW)

    def _flag(self, node: cst.Assign) -> tuple[str, str] | None:
        names = self.qualified(node.targets[0].target)
        for name in names:
            if name in _SAFE_FLAGS:
                return "NRN112", f"{name} removed: {_SAFE_FLAGS[name]}"
            if name in _REVIEW_FLAGS:
                return "NRN113", f"{name} removed: {_REVIEW_FLAGS[name]}"
        return None

    def _call(self, node: cst.Expr) -> str | None:
        if not isinstance(node.value, cst.Call):
            return None
        for name in self.qualified(node.value.func):
            if name in _REVIEW_CALLS:
                return f"{name}() removed: {_REVIEW_CALLS[name]}"
        return None

    def _removable(self, statement: cst.BaseStatement) -> bool:
        small = single_small(statement)
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            return self._flag(small) is not None
        if isinstance(small, cst.Expr):
            return self._call(small) is not None
        return False
