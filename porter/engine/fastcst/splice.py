"""The ported file's text from the original text and the statements the port rebuilt.

The edit applier keeps every statement it did not enter as the same object, so the ported
module's body is the original's with some runs of statements replaced. Generating the whole
module's code costs a fifth of a parse, and checking that libcst reproduces the original costs
as much again; here only the replaced runs are generated, and everything else is the original
text itself — every byte the port does not own is kept as it was, not as libcst prints it. A
replaced compound statement (class, def, if/else, for, while, with, try clauses; not an elif)
whose own header and blocks' framing the port kept is entered, and so on down: an edit in one
method regenerates that method's code (indented as in its blocks), not its class's (a giant class
cost two code generations of itself per edited file). A statement whose comment and blank lines
above it alone changed (a review marker added) has only those lines generated.

Where each statement of a body starts comes from CPython's ``ast`` of the original (already
parsed by the engine's depth check): the first line of the statement (of its first decorator),
minus the comment and blank lines libcst attaches above it. Each replaced run is checked: the
original text there must be exactly libcst's code for the run's original statements. Anything
this cannot place or check (a changed module header or footer, an emptied module, statements added with none
replaced, the last statement of a file without a final newline, a statement count that does not
match the ``ast``) answers None: the caller generates the whole module instead. Inside a compound
statement, a block it cannot place or check has the statement replaced whole, as at the top level.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")


def _same(first: Sequence[object], second: Sequence[object]) -> bool:
    return len(first) == len(second) and all(a is b for a, b in zip(first, second))


def first_lines(statements: Sequence[cst.BaseStatement], body: Sequence[ast.stmt]) -> list[int] | None:
    """The 1-based line where the code of each of ``statements`` (a module's or an indented
    block's) starts (its leading comment and blank lines included), read from ``body``, CPython's
    statements of the same code; None when ``body`` does not match them."""
    found: list[int] = []
    at = 0
    for statement in statements:
        if at >= len(body):
            return None
        node = body[at]
        line = node.lineno
        above = len(getattr(statement, "leading_lines", ()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
            decorators = getattr(statement, "decorators", ())
            if not decorators:
                return None
            line = node.decorator_list[0].lineno
            above += len(decorators[0].leading_lines)
        found.append(line - above)
        at += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return found if at == len(body) else None


def spliced(original: cst.Module, new: cst.Module, text: str, tree: ast.Module | None) -> str | None:
    """``new``'s code as the original ``text`` with the replaced statements' code put in, or None."""
    if tree is None or not new.body or not _same(original.header, new.header) or not _same(original.footer, new.footer):
        return None
    if (original.encoding, original.default_indent, original.default_newline, original.has_trailing_newline) != (
        new.encoding, new.default_indent, new.default_newline, new.has_trailing_newline
    ):
        return None
    if _same(original.body, new.body):
        return None
    line_starts = [0, *(match.end() for match in _NEWLINE.finditer(text))]
    pieces = _Body(original, text, line_starts).replacements(original.body, new.body, tree.body, [])
    if pieces is None:
        return None
    if not pieces:
        return text  # rebuilt statements whose code is the original's
    if pieces[-1][1] == len(text) and not original.has_trailing_newline:
        return None  # libcst drops the last statement's newline there
    out: list[str] = []
    done = 0
    for start, stop, code in pieces:
        out += [text[done:start], code]
        done = stop
    out.append(text[done:])
    return "".join(out)


class _Body:
    """The replaced spans of one file's text, found body by body: a class or def whose header the
    port kept is entered, so an edit in one method regenerates that method's code, not its class's."""

    def __init__(self, original: cst.Module, text: str, line_starts: list[int]) -> None:
        self.original, self.text, self.line_starts = original, text, line_starts

    def code(self, statements: Sequence[cst.CSTNode], indents: Sequence[str]) -> str:
        """The statements' code as it stands in a body of these indentations (libcst's codegen)."""
        state = CodegenState(default_indent=self.original.default_indent, default_newline=self.original.default_newline)
        state.indent_tokens.extend(indents)
        for statement in statements:
            statement._codegen(state)
        return "".join(state.tokens)

    def replacements(
        self, old_body: Sequence[cst.BaseStatement], new_body: Sequence[cst.BaseStatement], python: Sequence[ast.stmt], indents: list[str]
    ) -> list[tuple[int, int, str]] | None:
        """(start, stop, new code) of each replaced run of ``old_body`` (in text order), or None when
        the runs cannot be placed or checked (see the module doc). The last statement of the
        module (end of text) is reported with ``stop == len(text)``."""
        lines = first_lines(old_body, python)
        line_starts = self.line_starts
        if lines is None or any(not 1 <= line <= len(line_starts) for line in lines):
            return None
        number = {id(statement): i for i, statement in enumerate(old_body)}
        # Runs: (first original replaced, last original replaced + 1, the new statements in their place).
        runs: list[tuple[int, int, list[cst.BaseStatement]]] = []
        kept = -1  # the original number of the last statement kept
        pending: list[cst.BaseStatement] = []
        for statement in [*new_body, None]:
            i = len(old_body) if statement is None else number.get(id(statement))
            if i is None:
                pending.append(statement)  # type: ignore[arg-type]
                continue
            if i <= kept:
                return None  # reordered: not a replacement
            if i > kept + 1 or pending:
                if i == kept + 1:
                    return None  # statements added with none replaced: no text to anchor them at
                if len(pending) == i - kept - 1:  # one for one: each its own run (a class or def may be entered)
                    runs += [(kept + 1 + k, kept + 2 + k, [each]) for k, each in enumerate(pending)]
                else:
                    runs.append((kept + 1, i, pending))
            kept, pending = i, []
        found: list[tuple[int, int, str]] = []
        text = self.text
        for first, end, statements in runs:
            if end == first + 1 and len(statements) == 1:
                inner = self._lines_above(old_body[first], statements[0], lines[first], indents)
                if inner is None:
                    inner = self._inside(old_body[first], statements[0], _python_of(old_body, python, first), indents)
                if inner is not None:
                    found += inner
                    continue
            start = line_starts[lines[first] - 1]
            old = self.code(old_body[first:end], indents)
            stop = start + len(old)
            if text[start:stop] != old or (end < len(old_body) and line_starts[lines[end] - 1] != stop):
                return None
            found.append((start, stop, self.code(statements, indents)))
        return found

    def _lines_above(self, old: cst.BaseStatement, new: cst.BaseStatement, line: int, indents: list[str]) -> list[tuple[int, int, str]] | None:
        """The span of the comment and blank lines above a statement whose lines alone the port
        changed (a review marker added: the statement's own code is not generated), or None. The
        old lines' code must be the text from ``line`` and end where the statement's own code
        starts."""
        if type(old) is not type(new) or not _only_differs(old, new, "leading_lines"):
            return None
        before, after = old.leading_lines, new.leading_lines  # type: ignore[attr-defined]
        start = self.line_starts[line - 1]
        code = self.code(before, indents)
        stop = start + len(code)
        own = line - 1 + len(before)  # the statement's own first line, 0-based
        if own >= len(self.line_starts) or self.line_starts[own] != stop or self.text[start:stop] != code:
            return None
        return [(start, stop, self.code(after, indents))]

    def _inside(
        self, old: cst.BaseStatement, new: cst.BaseStatement, node: ast.stmt, indents: list[str]
    ) -> list[tuple[int, int, str]] | None:
        """The replaced spans inside a compound statement whose blocks alone the port changed
        (None: it is replaced whole)."""
        kind = type(old)
        fields = _BLOCK_FIELDS.get(kind)
        if fields is None or type(new) is not kind or not isinstance(node, _AST_KINDS[kind]):
            return None
        if any(name not in fields and not _same_value(getattr(old, name), getattr(new, name)) for name in old.__dataclass_fields__):  # type: ignore[attr-defined]
            return None
        found: list[tuple[int, int, str]] = []
        for name in fields:
            before, after = getattr(old, name), getattr(new, name)
            if _same_value(before, after):
                continue
            blocks = _changed_blocks(name, before, after, node)
            if blocks is None:
                return None
            for old_block, new_block, python in blocks:
                inner = self._block(old_block, new_block, python, indents)
                if inner is None:
                    return None
                found += inner
        return found

    def _block(self, old: cst.CSTNode, new: cst.CSTNode, python: list[ast.stmt], indents: list[str]) -> list[tuple[int, int, str]] | None:
        """The replaced spans in an indented block whose statements alone the port changed."""
        if type(old) is not cst.IndentedBlock or type(new) is not cst.IndentedBlock:
            return None
        if not new.body or old.indent != new.indent or old.header is not new.header or not _same(old.footer, new.footer):  # type: ignore[attr-defined]
            return None  # an emptied body prints as ``pass``
        indent = self.original.default_indent if old.indent is None else old.indent  # type: ignore[attr-defined]
        return self.replacements(old.body, new.body, python, [*indents, indent])  # type: ignore[attr-defined]


# The fields of a compound statement that hold its indented blocks (in source order), and CPython's
# statement types for it.
_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("body",), cst.ClassDef: ("body",), cst.If: ("body", "orelse"), cst.For: ("body", "orelse"),
    cst.While: ("body", "orelse"), cst.With: ("body",), cst.Try: ("body", "handlers", "orelse", "finalbody"),
}
_AST_KINDS: dict[type, tuple[type, ...]] = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef), cst.ClassDef: (ast.ClassDef,), cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor), cst.While: (ast.While,), cst.With: (ast.With, ast.AsyncWith), cst.Try: (ast.Try,),
}


def _changed_blocks(name: str, before: object, after: object, node: ast.stmt) -> list[tuple[cst.CSTNode, cst.CSTNode, list[ast.stmt]]] | None:
    """The (old block, new block, CPython's statements of it) of a compound statement's changed
    block field; None when more than blocks changed there (an ``elif`` is not entered: its header
    prints as ``if`` alone)."""
    if name == "body":
        return [(before, after, node.body)]  # type: ignore[list-item, attr-defined]
    if name == "handlers":
        python = node.handlers  # type: ignore[attr-defined]
        if not isinstance(before, (list, tuple)) or not isinstance(after, (list, tuple)) or not len(before) == len(after) == len(python):
            return None
        found: list[tuple[cst.CSTNode, cst.CSTNode, list[ast.stmt]]] = []
        for old, new, handler in zip(before, after, python):
            if old is new:
                continue
            if type(old) is not cst.ExceptHandler or type(new) is not cst.ExceptHandler or not _only_differs(old, new, "body"):
                return None
            found.append((old.body, new.body, handler.body))
        return found
    clause = cst.Else if name == "orelse" else cst.Finally
    if type(before) is not clause or type(after) is not clause or not _only_differs(before, after, "body"):  # type: ignore[arg-type]
        return None
    return [(before.body, after.body, node.orelse if name == "orelse" else node.finalbody)]  # type: ignore[attr-defined]


def _same_value(before: object, after: object) -> bool:
    """Whether two values of a node field are the same: one object, a sequence of the same
    objects, or equal text."""
    if before is after:
        return True
    if isinstance(before, (list, tuple)) and isinstance(after, (list, tuple)):
        return _same(before, after)
    return isinstance(before, str) and before == after


def _python_of(statements: Sequence[cst.BaseStatement], python: Sequence[ast.stmt], number: int) -> ast.stmt:
    """CPython's statement for ``statements[number]`` (a simple statement line holds several);
    ``first_lines`` has matched the two lists."""
    at = sum(len(s.body) if isinstance(s, cst.SimpleStatementLine) else 1 for s in statements[:number])
    return python[at]


def _only_differs(old: cst.CSTNode, new: cst.CSTNode, field: str) -> bool:
    """Whether ``new`` is ``old`` with another ``field``: every other field the same objects."""
    return all(name == field or _same_value(getattr(old, name), getattr(new, name)) for name in old.__dataclass_fields__)  # type: ignore[attr-defined]
