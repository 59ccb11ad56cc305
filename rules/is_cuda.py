"""NRN106: ``x.is_cuda`` becomes ``x.device.type == "neuron"``."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.fastcst.walk import TreeIndex
from porter.engine.rule import Rule
from porter.rules._lib.branches import in_kept_cuda_test
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.precision import ScalerStays
from porter.rules._lib.tree import child_index, visit_original

# Parents in which a comparison must be parenthesised to keep its meaning.
_TIGHT = (cst.Attribute, cst.Call, cst.Subscript, cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)


class IsCuda(Rule):
    """Port the ``is_cuda`` tensor property.

    What it does:
        ``x.is_cuda`` → ``x.device.type == "neuron"`` (parenthesised where an operator around it
        would bind tighter); ``not x.is_cuda`` → ``x.device.type != "neuron"``. With ``--style
        accelerator``: ``x.device.type != "cpu"`` (``not x.is_cuda`` → ``x.device.type == "cpu"``).

    Why:
        On Trainium tensors live on the ``neuron`` device and ``is_cuda`` is False, so a check
        like ``if not x.is_cuda: x = x.cuda()`` or ``pin = not batch.is_cuda`` silently takes the
        CPU path. TorchNeuron has no ``is_neuron`` property in the facts gathered (unverified), and
        ``device.type`` works for every device.

    Before:
        if not images.is_cuda:
            images = images.to(device)
        on_gpu = next(model.parameters()).is_cuda

    After:
        if images.device.type != "neuron":
            images = images.to(device)
        on_gpu = next(model.parameters()).device.type == "neuron"

        A test whose CUDA branch holds CUDA-only code (``if x.is_cuda:
        torch.cuda.memory._record_memory_history()``, triton, ``channels_last``: see
        ``rules/_lib/branches.py:CudaOnlyBranches``) is kept: it stays false on Neuron, as the
        branch needs. So is a test that turns on a fused optimizer (``{"fused": True} if
        p.is_cuda else {}``, ``fused=p.is_cuda``) in a file where a GradScaler stays (float16
        reachable): Neuron's fused Adam/AdamW ignores the scaler (neuron-facts §0.1), so the
        unfused optimizer the test picks on Neuron is the one that works; it gets a marker.
        In a file that imports a CUDA kernel language (triton, helion, numba.cuda,
        or torch.utils.cpp_extension's builds: ``rules/_lib/branches.py:KernelFile``) every ``is_cuda`` read is kept: there it chooses
        between the file's kernels and a torch path (``if not x.is_cuda: return torch_path(x)``,
        ``return x.is_cuda and x.is_contiguous()`` as a kernel's eligibility), and Neuron must take
        the torch path, which ran on the CPU before.

    Safety:
        Safe. Receiver heuristic: every read of an attribute named ``is_cuda`` is taken to be the
        tensor property (modules, storages and tensors are the only torch objects with it).
        Receivers the file itself assigns (``self.is_cuda = ...``) are user attributes and are
        left alone; ``hasattr(x, "is_cuda")`` strings are not touched. A user class exposing its
        own ``is_cuda`` without assigning it in this file is rewritten too (known miss).
    """

    code: ClassVar[str] = "NRN106"
    name: ClassVar[str] = "is-cuda"
    summary: ClassVar[str] = 'x.is_cuda -> x.device.type == "neuron"'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = (".is_cuda",)
    order: ClassVar[int] = 10

    def visit_Module(self, node: cst.Module) -> None:
        self._assigned: set[str] = set()
        for target in _assignment_targets(node, child_index(self)):
            if isinstance(target, cst.Attribute) and target.attr.value == "is_cuda":
                self._assigned.add(dotted(target.value) or "")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "is_cuda":
            return
        if (dotted(node.value) or "\0") in self._assigned or self._is_store(node):
            return
        if in_kept_cuda_test(self, node):
            return  # its branch is CUDA-only: the test keeps its meaning (rules/_lib/branches.py)
        if self._turns_on_fused(node):
            scaler = self.analysis(ScalerStays).line
            if scaler is not None:
                self.mark(
                    node,
                    f".is_cuda kept: it turns on fused=True, and a GradScaler stays in this file (line {scaler}; Neuron's fused "
                    "Adam/AdamW ignores the scaler's grad_scale/found_inf: unscaled, unskipped updates)",
                )
                return
        accelerator = self.options.style == "accelerator"
        parent = self.parent(node)
        # ``not x.is_cuda`` -> ``x.device.type != "neuron"`` (no double negative)
        negated = isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)
        wanted = "cpu" if accelerator else "neuron"
        equal = accelerator == negated  # neuron style: ==, accelerator style: != (flipped under ``not``)
        target: cst.CSTNode = parent if negated and parent is not None else node
        tight = isinstance(self.parent(target), _TIGHT)
        operator = "==" if equal else "!="

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            attribute = updated.expression if isinstance(updated, cst.UnaryOperation) else updated
            assert isinstance(attribute, cst.Attribute)
            device_type = cst.Attribute(value=cst.Attribute(value=attribute.value, attr=cst.Name("device")), attr=cst.Name("type"))
            comparison = cst.Comparison(
                left=device_type,
                comparisons=[
                    cst.ComparisonTarget(
                        operator=cst.Equal() if equal else cst.NotEqual(),
                        comparator=cst.SimpleString(f'"{wanted}"'),
                    )
                ],
            )
            if tight:
                return comparison.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return comparison.with_changes(lpar=updated.lpar, rpar=updated.rpar)  # type: ignore[attr-defined]

        prefix = "not " if negated else ""
        self.replace(target, transform, f'{prefix}.is_cuda -> .device.type {operator} "{wanted}"')

    def _turns_on_fused(self, node: cst.Attribute) -> bool:
        """The statement holding ``node`` chooses a fused optimizer: a ``"fused"`` dict key
        (``{"fused": True} if p.is_cuda else {}``), a ``fused=`` keyword, or a target named for it
        (``use_fused = p.is_cuda``). A statement-level heuristic: the flag's later use is not followed."""
        statement = self.statement_of(node)
        for inner in child_index(self).walk(statement):
            if isinstance(inner, cst.DictElement) and string_value(inner.key) == "fused":
                return True
            if isinstance(inner, cst.Arg) and inner.keyword is not None and inner.keyword.value == "fused":
                return True
            if isinstance(inner, cst.AssignTarget) and "fused" in (dotted(inner.target) or "").lower():
                return True
        return False

    def _is_store(self, node: cst.Attribute) -> bool:
        parent = self.parent(node)
        return isinstance(parent, cst.AssignTarget) or (
            isinstance(parent, (cst.AnnAssign, cst.AugAssign)) and parent.target is node
        )


def _assignment_targets(module: cst.Module, index: TreeIndex | None = None) -> list[cst.BaseExpression]:
    found: list[cst.BaseExpression] = []

    class _Collect(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            found.append(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            found.append(node.target)

    visit_original(index, module, _Collect())
    return found
