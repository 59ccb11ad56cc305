"""NRN731-NRN740: constructs in model code that break graphs, re-shape them or fall back to the CPU."""

from __future__ import annotations

import ast
import re
from typing import ClassVar, cast

import libcst as cst

from porter.engine.astcheck import SourceFacts, own_nodes
from porter.engine.astcheck import dotted as ast_dotted
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
# For may_edit: the names of the hazards flagged anywhere, and the last parts of those flagged in forward.
_ANYWHERE = tuple(sorted({name for name, hazard in FUNCTIONS.items() if hazard.where == "anywhere"} | set(ATTRIBUTES)))
_ANYWHERE_METHODS = frozenset(m for m, hazard in METHODS.items() if hazard.where == "anywhere" and m not in FORWARD_ONLY_METHODS)
_FORWARD_FUNCTIONS = frozenset(name.rsplit(".", 1)[-1] for name, hazard in FUNCTIONS.items() if hazard.where == "forward")
_WHERE = frozenset({"where"})
_CONTROL_FUNCTIONS = frozenset({"any", "all", "isnan", "equal", "count_nonzero"})


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
        # Top-level alternatives, each a word literal: the prefilter searches each one by its literal
        # (porter.engine.patterns), where one alternation would be tried at every position of the text.
        r"\bdef[\s\\]+forward\b|\bpolar\b|\bcomplex|\bsparse(?:\b|_co|_cs)|\bqr\b|\bsvd\b|\bcholesky|\binverse\b"
        r"|\bdet\b|\blogdet\b|\bslogdet\b|\bcfloat\b|\bcdouble\b|view_as_complex|to_sparse|channels_last|linalg|triangular_solve"
    )
    extra_codes: ClassVar[dict[str, str]] = {h.code: h.message.split(":")[0] for h in ALL_HAZARDS if h.code != "NRN731"}
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 80

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """Every edit is a ``_flag`` marker. An "anywhere" hazard is a qualified name of FUNCTIONS or
        ATTRIBUTES (each part of it then an identifier of the file: ``SourceFacts.spells``) or a
        ``to_sparse*`` method. A "forward" one needs a node whose innermost def is a ``forward``
        whose nearest class above it is named like a module class (``_in_forward``; the classes
        of ``visit_Module``'s fixpoint, a base's qualified name read from the imports) and, there,
        what ``visit_Subscript`` flags (an index, or an element of the index tuple, that is a
        comparison or a mask-named name; not directly the target of ``=``/``+=``/an annotated
        assignment), what ``visit_Call`` flags (a METHODS attribute; a call that may be named a
        forward FUNCTIONS entry or ``torch.where`` with one argument) or what ``_control`` flags
        (an ``if``/``while`` test calling a VALUE_METHODS attribute or maybe torch.any/all/isnan/
        equal/count_nonzero)."""
        if any(facts.spells(name) for name in _ANYWHERE) or facts.identifiers & _ANYWHERE_METHODS:
            return True
        forwards = facts.methods("forward")
        if not forwards:
            return False
        modules = _module_classes(facts)
        return any(owner.name in modules and _forward_hazard(facts, forward) for forward, owner in forwards)

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


def _module_classes(facts: SourceFacts) -> set[str]:
    """``visit_Module``'s fixpoint on CPython's tree: the names of the file's classes with a base
    that may be ``torch.nn.Module`` (an import can name it so), a module class of the file, or
    a name like ``*Module``/``*PreTrainedModel``."""
    classes = facts.of(ast.ClassDef)
    modules: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in modules:
                continue
            for base in cls.bases:
                text = ast_dotted(base.value if isinstance(base, ast.Starred) else base) or ""
                if facts.import_names(base) & set(_MODULE_BASES) or text.split(".")[-1] in modules or _MODULE_LIKE.search(text):
                    modules.add(cls.name)
                    changed = True
                    break
    return modules


def _forward_hazard(facts: SourceFacts, forward: ast.AST) -> bool:
    """Whether the own code of ``forward`` holds what CompileHazards.may_edit names."""
    written: set[int] = set()  # subscripts directly assigned to (ids)
    for node, _ in own_nodes(forward):
        kind = type(node)
        if kind is ast.Assign:
            written.update(id(target) for target in node.targets)  # type: ignore[attr-defined]
        elif kind is ast.AugAssign or kind is ast.AnnAssign:
            written.add(id(node.target))  # type: ignore[attr-defined]
        elif kind is ast.Subscript:
            index = node.slice  # type: ignore[attr-defined]
            parts = [index, *index.elts] if isinstance(index, ast.Tuple) else [index]
            if id(node) not in written and any(
                isinstance(part, ast.Compare) or (isinstance(part, ast.Name) and _MASK_NAME.search(part.id)) for part in parts
            ):
                return True
        elif kind is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if isinstance(func, ast.Attribute) and func.attr in METHODS or facts.may_name(func, _FORWARD_FUNCTIONS):
                return True
            if facts.may_name(func, _WHERE) and len(node.args) + len(node.keywords) == 1:  # type: ignore[attr-defined]
                return True
        elif kind is ast.If or kind is ast.While:
            for inner in ast.walk(node.test):  # type: ignore[attr-defined]
                if isinstance(inner, ast.Call) and (
                    isinstance(inner.func, ast.Attribute) and inner.func.attr in VALUE_METHODS or facts.may_name(inner.func, _CONTROL_FUNCTIONS)
                ):
                    return True
    return False
