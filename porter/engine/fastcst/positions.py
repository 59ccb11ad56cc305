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

When the engine has CPython's tree of the same text (``tree``, ``text``), the first line of a
top-level statement, and of a statement of any indented block holding the node (a class or def
body, an ``if``/``else``/``for``/``while``/``with`` body, a ``try`` clause, a ``case``; not an
``elif``, which libcst prints as ``if`` alone), is read from it instead (``splice.first_lines``:
no code generated for the statements before it), so a node deep in a long function costs the code
of its own small statement. That innermost statement's code and positions come from one code
generation; the code must be exactly the text at that line (with its indentation), or the line
is computed as above. So the answer is the same either way.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import NEWLINE_RE

from porter.engine.fastcst.splice import first_lines

_DEFS = (cst.ClassDef, cst.FunctionDef)
_AST_DEFS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_NEWLINE = re.compile(r"\r\n?|\n")
# A body's statements read from CPython's tree: (statement -> number, first lines, CPython's statement of each).
_AstBody = tuple[dict[cst.CSTNode, int], list[int], list[ast.stmt]]


def _lines(code: str) -> int:
    return len(NEWLINE_RE.findall(code))


_Position = tuple[int, int]  # (line, column)
_Range = tuple[_Position, _Position]  # (start, end)


class _RangeState(CodegenState):
    """libcst's ``PositionProvidingCodegenState`` (1.9) with ranges as tuples in ``ranges``: the
    same starts and ends (syntactic, hoisted from ``start_node``/``end_node`` where a node says so,
    else the whitespace-inclusive ones), without a regular-expression split of every token, a
    generator per syntactic range or position objects per node. ``tests/test_walk.py`` compares
    the positions with PositionProvider's."""

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.line, self.column = 1, 0
        self.ranges: dict[cst.CSTNode, _Range] = {}
        self._starts: list[_Position] = []

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def _advance(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        segments = NEWLINE_RE.split(value)
        self.line += len(segments) - 1
        self.column = len(segments[-1])

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        if node not in self.ranges:  # a syntactic range already recorded wins
            self.ranges[node] = (start, (self.line, self.column))

    def record_syntactic_position(  # type: ignore[override]
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """The context manager of ``_RangeState.record_syntactic_position``."""

    __slots__ = ("end_node", "node", "start", "start_node", "state")

    def __init__(self, state: _RangeState, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node
        self.start: _Position = (0, 0)

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> None:
        state = self.state
        start = state.ranges[self.start_node][0] if self.start_node is not None else self.start
        end = state.ranges[self.end_node][1] if self.end_node is not None else (state.line, state.column)
        state.ranges[self.node] = (start, end)


class StatementPositions:
    """``(line, column)`` of nodes of ``module``'s original tree, like ``PositionProvider``'s start."""

    def __init__(
        self, module: cst.Module, parents: Mapping[cst.CSTNode, cst.CSTNode], text: str | None = None, tree: ast.Module | None = None
    ) -> None:
        self._module = module
        self._text = text
        self._tree = tree
        self._ast_bodies: dict[int, _AstBody | None] = {}  # id(module or block) -> its body from CPython's tree
        self._checked: dict[int, int | None] = {}  # id(innermost statement) -> its first line, checked (None: not)
        self._line_offsets: list[int] | None = None
        self._parents = parents
        self._index = {statement: number for number, statement in enumerate(module.body)}
        header = "".join(module.code_for_node(line) for line in module.header)
        self._starts: list[int] = [1 + _lines(header)]  # 1-based first line of statement i
        # A class or def body: (its statements' numbers, their first lines relative to the def's start).
        self._bodies: dict[int, tuple[dict[cst.CSTNode, int], list[int]]] = {}
        self._inside: dict[int, tuple[str, Mapping[cst.CSTNode, _Range]]] = {}
        self._whole_module: Mapping[cst.CSTNode, CodeRange] | None = None

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
        if self._tree is not None:
            found = self._from_tree(node, path, number)
            if found is not None:
                return found
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
        start_line, start_column = self._inside_of(statement, blocks)[node][0]
        return line + start_line - 1 - len(blocks), start_column

    def _alone(self, statement: cst.CSTNode, blocks: Sequence[cst.IndentedBlock]) -> cst.Module:
        """A module holding ``statement`` alone, in one ``if _:`` per enclosing body."""
        wrapped: cst.BaseStatement = statement  # type: ignore[assignment]
        for block in reversed(blocks):
            wrapped = cst.If(test=cst.Name("_"), body=cst.IndentedBlock(body=[wrapped], indent=block.indent))
        return self._module.with_changes(header=(), body=(wrapped,), footer=())

    def _inside_of(self, statement: cst.CSTNode, blocks: Sequence[cst.IndentedBlock]) -> Mapping[cst.CSTNode, _Range]:
        return self._generated(statement, blocks)[1]

    def _generated(self, statement: cst.CSTNode, blocks: Sequence[cst.IndentedBlock]) -> tuple[str, Mapping[cst.CSTNode, _Range]]:
        """The code of ``statement`` alone (see ``_alone``) and ``PositionProvider``'s ranges in it,
        from one code generation (``_RangeState``: what ``MetadataWrapper.resolve(PositionProvider)`` runs)."""
        found = self._inside.get(id(statement))
        if found is None:
            alone = self._alone(statement, blocks)
            state = _RangeState(default_indent=alone.default_indent, default_newline=alone.default_newline)
            alone._codegen(state)
            found = self._inside[id(statement)] = ("".join(state.tokens), state.ranges)
        return found

    # ----------------------------------------------------------------- lines from CPython's tree
    def _from_tree(self, node: cst.CSTNode, path: list[cst.CSTNode], number: int) -> tuple[int, int] | None:
        """As ``__call__``, the statements' first lines read from CPython's tree; None when it
        does not match or the text at the line found is not the statement's code."""
        module = self._module
        known = self._ast_body(module, module.body, self._tree.body)  # type: ignore[union-attr]
        if known is None:
            return None
        _, lines, nodes = known
        line, python = lines[number], nodes[number]
        statement: cst.CSTNode = path[-1]
        blocks: list[cst.IndentedBlock] = []
        depth = len(path) - 1  # path[depth] is statement
        while True:
            found = _block_on_path(statement, python, path, depth)
            if found is None:
                break
            block, body, depth = found  # path[depth] is block now
            known = self._ast_body(block, block.body, body)
            if known is None:
                return None
            numbers, lines, nodes = known
            inner = numbers.get(path[depth - 1]) if depth >= 1 else None
            if inner is None:  # the block itself, or its own header or footer lines
                break
            line, python = lines[inner], nodes[inner]
            blocks.append(block)
            statement, depth = path[depth - 1], depth - 1
        checked = self._checked.get(id(statement), -1)
        if checked == -1:
            checked = self._checked[id(statement)] = line if self._is_at(statement, blocks, line) else None
        if checked is None:
            return None
        start_line, start_column = self._inside_of(statement, blocks)[node][0]
        return line + start_line - 1 - len(blocks), start_column

    def _ast_body(self, owner: cst.CSTNode, statements: Sequence[cst.BaseStatement], body: Sequence[ast.stmt]) -> _AstBody | None:
        if id(owner) in self._ast_bodies:
            return self._ast_bodies[id(owner)]
        lines = first_lines(statements, body)
        found: _AstBody | None = None
        if lines is not None:
            nodes: list[ast.stmt] = []
            at = 0
            for statement in statements:
                nodes.append(body[at])
                at += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
            found = ({statement: i for i, statement in enumerate(statements)}, lines, nodes)
        self._ast_bodies[id(owner)] = found
        return found

    def _is_at(self, statement: cst.CSTNode, blocks: Sequence[cst.IndentedBlock], line: int) -> bool:
        """Whether the text at ``line`` is ``statement``'s code, indented as in its blocks."""
        text = self._text
        if text is None:
            return False
        if self._line_offsets is None:
            self._line_offsets = [0, *(match.end() for match in _NEWLINE.finditer(text))]
        offsets = self._line_offsets
        if not 1 <= line <= len(offsets):
            return False
        code = self._generated(statement, blocks)[0]
        at = 0
        for _ in blocks:  # past the `if _:` lines
            match = _NEWLINE.search(code, at)
            if match is None:
                return False
            at = match.end()
        own = code[at:]
        return bool(own) and text.startswith(own, offsets[line - 1])

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
        if self._whole_module is None:
            self._whole_module = MetadataWrapper(self._module, unsafe_skip_copy=True).resolve(PositionProvider)
        start = self._whole_module[node].start
        return start.line, start.column


def _block_on_path(
    statement: cst.CSTNode, python: ast.stmt, path: Sequence[cst.CSTNode], depth: int
) -> tuple[cst.IndentedBlock, list[ast.stmt], int] | None:
    """The indented block of compound ``statement`` (``path[depth]``) that holds ``path[0]``, with
    CPython's statements of it and its depth in ``path``; None when the node is not in such a block
    (a test, a header) or the two trees do not match there. An ``elif`` is not entered: alone,
    libcst prints it as ``if``."""
    if depth < 1:
        return None
    child = path[depth - 1]
    kind = type(statement)
    body: object = None
    if child is getattr(statement, "body", None):
        if kind is cst.FunctionDef:
            body = python.body if isinstance(python, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        elif kind is cst.ClassDef:
            body = python.body if isinstance(python, ast.ClassDef) else None
        else:
            body = getattr(python, "body", None) if type(python) in _AST_BODIES.get(kind, ()) else None
        found: cst.CSTNode = child
        at = depth - 1
    elif depth >= 2 and type(child) in _CLAUSES and path[depth - 2] is getattr(child, "body", None):
        found, at = path[depth - 2], depth - 2
        if type(child) is cst.Else and child is getattr(statement, "orelse", None) and type(python) in _AST_BODIES.get(kind, ()):
            body = getattr(python, "orelse", None)
        elif type(child) is cst.Finally and kind in (cst.Try, cst.TryStar) and isinstance(python, _AST_TRIES):
            body = getattr(python, "finalbody", None)
        elif type(child) is cst.ExceptHandler and kind is cst.Try and isinstance(python, ast.Try):
            body = _nth_body(statement.handlers, python.handlers, child)  # type: ignore[attr-defined]
        elif type(child) is cst.ExceptStarHandler and kind is cst.TryStar and isinstance(python, _AST_TRIES):
            body = _nth_body(statement.handlers, python.handlers, child)  # type: ignore[attr-defined]
        elif type(child) is cst.MatchCase and kind is cst.Match and isinstance(python, ast.Match):
            body = _nth_body(statement.cases, python.cases, child)  # type: ignore[attr-defined]
    else:
        return None
    if not isinstance(body, list) or type(found) is not cst.IndentedBlock:
        return None
    return found, body, at  # type: ignore[return-value]


def _nth_body(clauses: Sequence[cst.CSTNode], python: Sequence[ast.AST], clause: cst.CSTNode) -> list[ast.stmt] | None:
    """CPython's body of the clause of ``clauses`` (an ``except``, a ``case``) that is ``clause``."""
    for number, each in enumerate(clauses):
        if each is clause:
            return python[number].body if number < len(python) and len(clauses) == len(python) else None  # type: ignore[attr-defined]
    return None


# Compound statements whose ``body`` (and ``orelse`` Else) CPython's statement holds alike.
_AST_TRIES: tuple[type, ...] = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)
_AST_BODIES: dict[type, tuple[type, ...]] = {
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,),
    cst.TryStar: _AST_TRIES[1:],
}
_CLAUSES = frozenset({cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase})
