"""Source positions of original nodes, computed one statement at a time.

libcst's ``PositionProvider`` generates the code of the whole module, recording a range for every
node: on a large file that costs more than parsing it, and a port usually reports a handful of
lines. Here the line where each top-level statement starts comes from the code generated for
the statements before it (lines counted the way ``PositionProvider`` counts them). Inside a class
or a function the same is done again for the statements of its body, so a node in a giant class
costs the code of its own method, not a ``PositionProvider`` pass over the class. Positions inside
that innermost statement come from ``PositionProvider`` run over a module holding it alone,
wrapped in one ``if _:`` per enclosing body with that body's indent — the same code with the same
indentation tokens, so the same columns. ``tests/test_walk.py`` compares both on fixtures and
samples.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import NEWLINE_RE

_DEFS = (cst.ClassDef, cst.FunctionDef)


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
        # A class or def body: (its statements' numbers, their first lines relative to the def's start).
        self._bodies: dict[int, tuple[dict[cst.CSTNode, int], list[int]]] = {}
        self._inside: dict[int, Mapping[cst.CSTNode, CodeRange]] = {}

    def __call__(self, node: cst.CSTNode) -> tuple[int, int]:
        module = self._module
        if node is module:
            return 1, 0
        path = [node]  # node and its ancestors below the module
        parent = self._parents.get(node)
        while parent is not None and parent is not module:
            path.append(parent)
            parent = self._parents.get(parent)
        top = path[-1]
        number = self._index.get(top)  # type: ignore[call-overload]
        if parent is None or number is None:  # module header/footer lines, or not in this tree
            return self._whole(node)
        while len(self._starts) <= number:
            done = len(self._starts) - 1
            self._starts.append(self._starts[done] + _lines(module.code_for_node(module.body[done])))
        line = self._starts[number]
        statement: cst.CSTNode = top
        blocks: list[cst.IndentedBlock] = []
        depth = len(path) - 1  # path[depth] is statement
        # Down through class and def bodies: path[depth - 1] is the body, path[depth - 2] a statement of it.
        while depth >= 2 and isinstance(statement, _DEFS) and path[depth - 1] is statement.body and isinstance(statement.body, cst.IndentedBlock):
            child = path[depth - 2]
            offset = self._body_line(statement, child)  # type: ignore[arg-type]
            if offset is None:  # the body's own header or footer lines
                break
            line += offset
            blocks.append(statement.body)
            statement, depth = child, depth - 2
        inside = self._inside.get(id(statement))
        if inside is None:
            wrapped: cst.BaseStatement = statement  # type: ignore[assignment]
            for block in reversed(blocks):
                wrapped = cst.If(test=cst.Name("_"), body=cst.IndentedBlock(body=[wrapped], indent=block.indent))
            alone = module.with_changes(header=(), body=(wrapped,), footer=())
            inside = self._inside[id(statement)] = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
        start = inside[node].start
        return line + start.line - 1 - len(blocks), start.column

    def _body_line(self, owner: cst.ClassDef | cst.FunctionDef, child: cst.CSTNode) -> int | None:
        """Lines from the first line of ``owner``'s code to the first line of ``child``'s, or None
        when ``child`` is not a statement of its body."""
        module = self._module
        body = owner.body
        assert isinstance(body, cst.IndentedBlock)
        known = self._bodies.get(id(owner))
        if known is None:
            empty = body.with_changes(body=(), footer=())
            prefix = _lines(module.code_for_node(owner.with_changes(body=empty))) - _lines(module.code_for_node(empty))
            first = prefix + _lines(module.code_for_node(body.header))
            known = self._bodies[id(owner)] = ({statement: i for i, statement in enumerate(body.body)}, [first])
        numbers, starts = known
        number = numbers.get(child)  # type: ignore[call-overload]
        if number is None:
            return None
        while len(starts) <= number:
            done = len(starts) - 1
            starts.append(starts[done] + _lines(module.code_for_node(body.body[done])))
        return starts[number]

    def _whole(self, node: cst.CSTNode) -> tuple[int, int]:
        whole = self._inside.get(-1)
        if whole is None:
            whole = self._inside[-1] = MetadataWrapper(self._module, unsafe_skip_copy=True).resolve(PositionProvider)
        start = whole[node].start
        return start.line, start.column
