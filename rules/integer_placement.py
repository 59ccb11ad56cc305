"""NRN105: integer device placements ``.to(local_rank)`` become ``.to(f"neuron:{local_rank}")``."""

from __future__ import annotations

import re

from typing import ClassVar

import libcst as cst

from porter.changes import Safety
from porter.rule import Rule
from porter.rules._device import INT_DEVICE_NAME
from porter.rules._helpers import ChildIndex, child_index, dotted, keyword, method_name, positional, visit_original


_INDEX_PLACEMENT = re.compile(r"(?:\.to\(|device=)\s*(?:\w+\.)?(?:\w*(?:rank|gpu|device_id)\w*|\d+)\b")

class IntegerPlacement(Rule):
    """Port placements that name the device by an integer index.

    What it does:
        ``model.to(local_rank)`` → ``model.to(f"neuron:{local_rank}")``, ``x.to(0)`` →
        ``x.to("neuron:0")``, ``torch.zeros(4, device=gpu_id)`` → ``torch.zeros(4,
        device=f"neuron:{gpu_id}")``, ``x.to(device=self.gpu_id, non_blocking=True)`` likewise.
        With ``--style accelerator`` nothing changes: in torch 2.13 an integer device is an index
        of the current accelerator, which is already device-generic.

    Why:
        In CUDA code an integer device means ``cuda:N``. On Trainium the device index of a
        process equals its local rank (facts §1.2), so ``f"neuron:{local_rank}"`` keeps the
        placement and states the device type, as the AWS examples write it.

    Before:
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model.to(self.gpu_id)
        source = source.to(self.gpu_id)

    After:
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model.to(f"neuron:{self.gpu_id}")
        source = source.to(f"neuron:{self.gpu_id}")

    Safety:
        Safe where the heuristic holds. Argument heuristic (``.to`` has no qualified receiver): the
        argument is an integer literal; or a name or attribute whose last part is a conventional
        index name (``local_rank``, ``rank``, ``gpu``, ``gpu_id``, ``device_id``, ``args.gpu``,
        ...); or a name/attribute this file assigns from ``int(...)`` (``int(os.environ
        ["LOCAL_RANK"])``), annotates as ``int``, binds with ``for i in range(...)``, or copies
        from such a name (``self.gpu_id = gpu_id``). Known misses (left unchanged): an index held
        in any other name (``d``, ``idx``), or one that arrives through a function call or
        another module. A conventional name the file assigns a string or ``torch.device(...)``
        (``gpu = torch.device("cuda")``), or annotates as ``torch.device``/``str``, is left alone;
        one that receives a device from elsewhere (a caller passing ``torch.device``) would be
        wrapped wrongly (not seen in the examples read).
    """

    code: ClassVar[str] = "NRN105"
    name: ClassVar[str] = "integer-placement"
    summary: ClassVar[str] = 'integer device placement .to(local_rank) -> .to(f"neuron:{local_rank}")'
    safety: ClassVar[Safety] = Safety.SAFE
    # The conventional index names the rule knows, and literal indices: a plain ".to(" would send
    # most of a large tree to the parser.
    triggers: ClassVar[tuple[str, ...]] = ("rank", "gpu", "device_id", "LOCAL_RANK", ".to(0", ".to(1", "device=0", "device=1")

    @classmethod
    def triggered_by(cls, text: str) -> bool:
        # ".to(" alone would send most of a large tree to the parser: look for an index-like
        # argument, or a LOCAL_RANK read whose int may be placed under any name.
        return "LOCAL_RANK" in text or _INDEX_PLACEMENT.search(text) is not None
    order: ClassVar[int] = 10

    def visit_Module(self, node: cst.Module) -> None:
        self._ints, self._not_ints = integer_names(self)

    def visit_Call(self, node: cst.Call) -> None:
        if self.options.style == "accelerator":
            return
        if method_name(node) == "to":
            arg = positional(node, 0) or keyword(node, "device")
        elif any(name.startswith("torch.") for name in self.qualified(node.func)):
            arg = keyword(node, "device")
        else:
            return
        if arg is None or not self._is_index(arg.value):
            return
        new = self._neuron(arg.value)
        self.replace(arg, lambda n: n.with_changes(value=new), 'integer device -> f"neuron:{index}"')  # type: ignore[attr-defined]

    def _is_index(self, value: cst.BaseExpression) -> bool:
        return holds_index(value, self._ints, self._not_ints)

    def _neuron(self, value: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(value, cst.Integer):
            return cst.SimpleString(f'"neuron:{value.value}"')
        return cst.parse_expression(f'f"neuron:{{{dotted(value)}}}"')


def holds_index(value: cst.BaseExpression, ints: set[str], not_ints: set[str]) -> bool:
    """NRN105's argument heuristic: an integer literal, or a name the file shows to hold an int
    or named like an index (``local_rank``, ``device_id``) and not shown to hold anything else."""
    if isinstance(value, cst.Integer):
        return True
    text = dotted(value)
    if text is None or text in not_ints:
        return False
    return text in ints or bool(INT_DEVICE_NAME.match(text.split(".")[-1]))


def integer_names(rule: Rule) -> tuple[set[str], set[str]]:
    """``_integer_names`` of the rule's file, computed once and shared (NRN102 asks it too)."""
    notes = rule.context.notes
    found = notes.get("integer_names")
    if found is None:
        found = notes["integer_names"] = _integer_names(rule.context.module, child_index(rule))
    return found  # type: ignore[return-value]


def _integer_names(module: cst.Module, index: ChildIndex | None = None) -> tuple[set[str], set[str]]:
    """Dotted names the file shows to hold ints (``x = int(...)``, ``x: int``, ``for x in range``),
    and names it shows to hold something else (``gpu = torch.device(...)``, ``rank = "cuda:0"``)."""
    found: set[str] = set()
    others: set[str] = set()
    copies: list[tuple[str, str]] = []

    class _Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                name = dotted(target.target)
                if name is None:
                    continue
                value = node.value
                if isinstance(value, cst.Call) and dotted(value.func) == "int":
                    found.add(name)
                elif dotted(value) is not None:
                    copies.append((name, dotted(value) or ""))
                elif isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)) or (
                    isinstance(value, cst.Call) and (dotted(value.func) or "").endswith("device")
                ):
                    others.add(name)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            name = dotted(node.target)
            if name is not None and dotted(node.annotation.annotation) == "int":
                found.add(name)

        def visit_Param(self, node: cst.Param) -> None:
            annotation = dotted(node.annotation.annotation) if node.annotation is not None else None
            if annotation == "int":
                found.add(node.name.value)
            elif annotation is not None and annotation.split(".")[-1] in ("device", "str"):
                others.add(node.name.value)

        def visit_For(self, node: cst.For) -> None:
            name = dotted(node.target)
            if name is not None and isinstance(node.iter, cst.Call) and dotted(node.iter.func) == "range":
                found.add(name)

    visit_original(index, module, _Collect())
    for target, source in copies:
        if source in found or INT_DEVICE_NAME.match(source.split(".")[-1]):
            found.add(target)
    return found - others, others
