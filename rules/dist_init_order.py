"""NRN302: ``init_process_group`` moves above the first device use in its block."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.nodes import dotted

_INIT = ("torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group")
# Statements that touch the device runtime (matched on source text, before or after other rules' edits).
_TOUCH = re.compile(
    r"\.cuda\(|\b(cuda|neuron|accelerator)\.(?!is_available\b|device_count\b|is_bf16_supported\b|current_accelerator\b|amp\b|OutOfMemoryError\b)\w+\s*\(|\.to\("
)
# Statements that set environment variables the init may read (MASTER_ADDR, RANK, ...).
_SETS_ENVIRON = re.compile(r"\benviron\s*\[[^\]]*\]\s*=(?!=)|\benviron\.(setdefault|update|pop)\b|\bputenv\b")
_INIT_TEXT = re.compile(r"\binit_process_group\s*\(")


class DistInitOrder(Rule):
    """Initialise the process group before the Neuron runtime is touched.

    What it does:
        When ``init_process_group(...)`` follows a device use in the same block
        (``torch.cuda.set_device(local_rank)``, ``model.cuda()``, ``x.to(...)``, any other
        ``torch.cuda.*`` runtime call), the init statement is moved to just above the first such
        use. When it cannot be moved safely — a statement in between assigns a name the init
        call reads, or sets environment variables — or the device use is in an enclosing block,
        the code is kept and a review marker is added.

    Why:
        TorchNeuron asserts ``Neuron runtime should not be initialized before the
        init_process_group`` (AWS Neuron docs, TorchNeuron distributed guide (torch/guides/torch-distributed); AWS Neuron docs, TorchNeuron troubleshooting (torch/troubleshooting)): the process group decides which NeuronCore the
        process owns (``NEURON_RT_VISIBLE_CORES`` from ``LOCAL_RANK``). CUDA code often calls
        ``torch.cuda.set_device(rank)`` first, which is harmless on GPUs.

    Before:
        def ddp_setup(rank, world_size):
            os.environ["MASTER_PORT"] = "12355"
            torch.cuda.set_device(rank)
            init_process_group(backend="nccl", rank=rank, world_size=world_size)

    After:
        def ddp_setup(rank, world_size):
            os.environ["MASTER_PORT"] = "12355"
            init_process_group(backend="neuron", rank=rank, world_size=world_size)
            torch.neuron.set_device(rank)

    Safety:
        Safe when moved: only statements that touch the device, or assign names the init call
        does not read, are crossed. A device use in another function that runs earlier (a
        helper called before ``setup()``) is not seen (known miss); a device use in an enclosing
        block gets a marker. Device-touching statements are recognised by their text
        (``.cuda(``, ``.to(``, ``cuda.<fn>(``) so they are found again after other rules rewrote
        them.
    """

    code: ClassVar[str] = "NRN302"
    name: ClassVar[str] = "dist-init-order"
    summary: ClassVar[str] = "init_process_group moved above the first device use (Neuron requires it)"
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("init_process_group",)
    order: ClassVar[int] = 60

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, *_INIT):
            return
        statement, block = self._statement_in_block(node)
        if statement is None or block is None:
            return
        body = list(block.body)
        index = body.index(statement)
        # A device use in an enclosing block cannot be fixed by a move inside this one: mark it
        # (checked first, so a move here and a marker on the next run never both happen).
        if self._outer_touch(block):
            self.mark(node, "device used before init_process_group in an enclosing block; init the group first")
            return
        touch = next((i for i, s in enumerate(body[:index]) if self._touches(s)), None)
        if touch is None:
            return
        between = body[touch:index]
        if _count_inits(body) != 1 or not self._can_cross(statement, between):
            self.mark(node, "device used above; move init_process_group before the first device use")
            return
        self.replace(node, lambda n: n, "init_process_group moved above the first device use")
        self.replace(block, _move_init_up, None)

    def _statement_in_block(self, node: cst.CSTNode) -> tuple[cst.BaseStatement | None, cst.Module | cst.IndentedBlock | None]:
        current: cst.CSTNode | None = node
        while current is not None:
            parent = self.parent(current)
            if isinstance(parent, (cst.Module, cst.IndentedBlock)) and isinstance(current, cst.BaseStatement):
                return current, parent
            if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None, None
            current = parent
        return None, None

    def _touches(self, statement: cst.CSTNode) -> bool:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return False
        return bool(_TOUCH.search(self.context.module.code_for_node(statement)))

    def _outer_touch(self, block: cst.CSTNode) -> bool:
        current: cst.CSTNode = block
        while True:
            owner = self.parent(current)  # the compound statement that owns this block
            if owner is None or isinstance(owner, (cst.FunctionDef, cst.ClassDef)) or isinstance(current, cst.Module):
                return False
            statement, outer = self._statement_in_block(owner)
            if statement is None or outer is None:
                return False
            body = list(outer.body)
            if any(self._touches(s) for s in body[: body.index(statement)]):
                return True
            current = outer

    def _can_cross(self, statement: cst.BaseStatement, between: Sequence[cst.BaseStatement]) -> bool:
        module = self.context.module
        read = _names_read(statement)
        for other in between:
            if _SETS_ENVIRON.search(module.code_for_node(other)):
                return False
            for target in _names_assigned(other):
                if any(name == target or name.startswith(target + ".") for name in read):
                    return False
        return True


def _count_inits(body: Sequence[cst.BaseStatement]) -> int:
    module = cst.Module(body=[])
    return sum(1 for statement in body if _INIT_TEXT.search(module.code_for_node(statement)))


def _move_init_up(updated: cst.CSTNode) -> cst.CSTNode:
    """In the updated block, move the init statement above the first device-touching statement."""
    assert isinstance(updated, (cst.Module, cst.IndentedBlock))
    module = cst.Module(body=[])
    body = list(updated.body)
    inits = [i for i, s in enumerate(body) if _INIT_TEXT.search(module.code_for_node(s))]
    if len(inits) != 1:
        return updated
    index = inits[0]
    touch = next((i for i, s in enumerate(body[:index]) if _touch_text(module, s)), None)
    if touch is None:
        return updated
    moved = body.pop(index)
    body.insert(touch, moved)
    return updated.with_changes(body=body)


def _touch_text(module: cst.Module, statement: cst.BaseStatement) -> bool:
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return False
    return bool(_TOUCH.search(module.code_for_node(statement)))


def _names_read(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            text = dotted(attribute)
            if text:
                found.add(text)

    node.visit(_Collect())
    return found


def _names_assigned(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _Collect(cst.CSTVisitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            found.update(_targets(target.target))

        def visit_AnnAssign(self, assign: cst.AnnAssign) -> None:
            found.update(_targets(assign.target))

        def visit_AugAssign(self, assign: cst.AugAssign) -> None:
            found.update(_targets(assign.target))

        def visit_For(self, loop: cst.For) -> None:
            found.update(_targets(loop.target))

        def visit_AsName(self, name: cst.AsName) -> None:
            found.update(_targets(name.name))

        def visit_NamedExpr(self, expr: cst.NamedExpr) -> None:
            found.update(_targets(expr.target))

    node.visit(_Collect())
    return found


def _targets(node: cst.CSTNode) -> set[str]:
    if isinstance(node, (cst.Tuple, cst.List)):
        return {name for element in node.elements for name in _targets(element.value)}
    text = dotted(node)
    return {text} if text else set()
