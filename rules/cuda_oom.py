"""NRN108: ``torch.cuda.OutOfMemoryError`` becomes the device-generic ``torch.OutOfMemoryError``."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.device import torch_ref
from porter.rules._lib.nodes import dotted

_NAME = "torch.cuda.OutOfMemoryError"


class CudaOutOfMemory(Rule):
    """Port ``torch.cuda.OutOfMemoryError`` to ``torch.OutOfMemoryError``.

    What it does:
        Every reference to ``torch.cuda.OutOfMemoryError`` (``except`` clauses, ``isinstance``
        checks, ``raise``) becomes ``torch.OutOfMemoryError``, in the file's spelling
        (``th.cuda.OutOfMemoryError`` → ``th.OutOfMemoryError``; ``from torch.cuda import
        OutOfMemoryError`` → ``torch.OutOfMemoryError`` with ``import torch``, the old import
        dropped once unused). Same output in both styles.

    Why:
        ``torch.cuda.OutOfMemoryError`` is an alias of the device-generic
        ``torch.OutOfMemoryError`` (torch ≥ 2.5), the exception every accelerator's allocator
        raises. Writing the generic name keeps ``except`` clauses meaningful on Neuron, where
        the ``torch.cuda`` namespace may be left un-initialised; that the Neuron allocator raises
        ``torch.OutOfMemoryError`` is an inference (facts §1.3 list ``num_ooms`` in its stats, not
        the exception type).

    Before:
        try:
            loss = step(batch)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()

    After:
        try:
            loss = step(batch)
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()  # ported by NRN103

    Safety:
        Safe: the two names are the same class in torch 2.13. A ``RuntimeError`` caught and
        matched on the text ``"CUDA out of memory"`` is not recognised (known miss).
    """

    code: ClassVar[str] = "NRN108"
    name: ClassVar[str] = "cuda-oom"
    summary: ClassVar[str] = "torch.cuda.OutOfMemoryError -> torch.OutOfMemoryError"
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("OutOfMemoryError",)
    order: ClassVar[int] = 20

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._consider(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._consider(node)

    def _consider(self, node: cst.Attribute | cst.Name) -> None:
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node):
            return  # only the whole dotted chain
        # The name first: the ancestor walk for every name was the rule's main cost on big files.
        if not self.matches(node, _NAME):
            return
        if any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in self.ancestors(node)):
            return
        text = dotted(node) or ""
        parts = text.split(".")
        message = "torch.cuda.OutOfMemoryError -> torch.OutOfMemoryError"
        if len(parts) >= 3 and parts[-2] == "cuda":
            self.replace(node, cst.parse_expression(".".join([*parts[:-2], "OutOfMemoryError"])), message)
            return
        name, imports = torch_ref(self.context.module)
        self.replace(node, cst.parse_expression(f"{name}.OutOfMemoryError"), message, imports=imports)
        if parts[0] == "cuda":
            self.drop_import_if_unused(ImportSpec("torch", "cuda"))
        else:
            self.drop_import_if_unused(ImportSpec("torch.cuda", "OutOfMemoryError"))
