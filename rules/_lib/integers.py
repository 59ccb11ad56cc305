"""Which names of a file hold integers (device indices): NRN102 and NRN105 decide alike."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from porter.engine.fastcst.walk import TreeIndex
from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.device import INT_DEVICE_NAME
from porter.rules._lib.nodes import dotted
from porter.rules._lib.tree import child_index, visit_original


@dataclass(frozen=True)
class IntegerNames(FileAnalysis):
    """Dotted names the file shows to hold ints, and those it shows to hold something else."""

    ints: frozenset[str]
    not_ints: frozenset[str]

    @classmethod
    def compute(cls, rule: Rule) -> IntegerNames:
        ints, others = _integer_names(rule.context.module, child_index(rule))
        return cls(frozenset(ints), frozenset(others))

    def holds_index(self, value: cst.BaseExpression) -> bool:
        return holds_index(value, self.ints, self.not_ints)


def holds_index(value: cst.BaseExpression, ints: frozenset[str] | set[str], not_ints: frozenset[str] | set[str]) -> bool:
    """NRN105's argument heuristic: an integer literal, or a name the file shows to hold an int
    or named like an index (``local_rank``, ``device_id``) and not shown to hold anything else."""
    if isinstance(value, cst.Integer):
        return True
    text = dotted(value)
    if text is None or text in not_ints:
        return False
    return text in ints or bool(INT_DEVICE_NAME.match(text.split(".")[-1]))


def _integer_names(module: cst.Module, index: TreeIndex | None = None) -> tuple[set[str], set[str]]:
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
