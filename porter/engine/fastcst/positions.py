"""Source positions of original nodes, computed one top-level statement at a time.

libcst's ``PositionProvider`` generates the code of the whole module, recording a range for every
node: on a large file that costs more than parsing it, and a port usually reports a handful of
lines. Here the line where each top-level statement starts comes from the code generated for
the statements before it (lines counted the way ``PositionProvider`` counts them), and positions
inside a statement from ``PositionProvider`` run over a module holding that one statement — the
same code, so the same columns. ``tests/test_walk.py`` compares both on fixtures and samples.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import NEWLINE_RE


def _lines(code: str) -> int:
    return len(NEWLINE_RE.findall(code))


class StatementPositions:
    """``(line, column)`` of nodes of ``module``'s original tree, like ``PositionProvider``'s start."""

    def __init__(self, module: cst.Module, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> None:
        self._module = module
        self._parents = parents
        self._index = {statement: number for number, statement in enumerate(module.body)}
        header = "".join(module.code_for_node(line) for line in module.header)
        self._starts: list[int] = [1 + _lines(header)]  # 1-based first line of statement i
        self._inside: dict[int, Mapping[cst.CSTNode, CodeRange]] = {}

    def __call__(self, node: cst.CSTNode) -> tuple[int, int]:
        module = self._module
        if node is module:
            return 1, 0
        top = node
        parent = self._parents.get(top)
        while parent is not None and parent is not module:
            top, parent = parent, self._parents.get(parent)
        number = self._index.get(top)  # type: ignore[call-overload]
        if parent is None or number is None:  # module header/footer lines, or not in this tree
            return self._whole(node)
        while len(self._starts) <= number:
            done = len(self._starts) - 1
            self._starts.append(self._starts[done] + _lines(module.code_for_node(module.body[done])))
        inside = self._inside.get(number)
        if inside is None:
            alone = module.with_changes(header=(), body=(top,), footer=())
            inside = self._inside[number] = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
        start = inside[node].start
        return self._starts[number] + start.line - 1, start.column

    def _whole(self, node: cst.CSTNode) -> tuple[int, int]:
        whole = self._inside.get(-1)
        if whole is None:
            whole = self._inside[-1] = MetadataWrapper(self._module, unsafe_skip_copy=True).resolve(PositionProvider)
        start = whole[node].start
        return start.line, start.column
