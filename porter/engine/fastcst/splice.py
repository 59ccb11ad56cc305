"""The ported file's text from the original text and the statements the port rebuilt.

The edit applier keeps every statement it did not enter as the same object, so the ported
module's body is the original's with some runs of statements replaced. Generating the whole
module's code costs a fifth of a parse, and checking that libcst reproduces the original costs
as much again; here only the replaced runs are generated, and everything else is the original
text itself — every byte the port does not own is kept as it was, not as libcst prints it. A
replaced class or def whose own header, decorators and block the port kept is entered, and so on
down: an edit in one method regenerates that method's code (indented as in its blocks), not its
class's (a giant class cost two code generations of itself per edited file).

Where each statement of a body starts comes from CPython's ``ast`` of the original (already
parsed by the engine's depth check): the first line of the statement (of its first decorator),
minus the comment and blank lines libcst attaches above it. Each replaced run is checked: the
original text there must be exactly libcst's code for the run's original statements. Anything
this cannot place or check (a changed module header or footer, an emptied module, statements added with none
replaced, the last statement of a file without a final newline, a statement count that does not
match the ``ast``) answers None: the caller generates the whole module instead. Inside a class or
def, a body it cannot place or check is replaced whole, as a top-level statement.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

_DEFS = (cst.ClassDef, cst.FunctionDef)
_AST_DEFS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
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

    def _inside(
        self, old: cst.BaseStatement, new: cst.BaseStatement, node: ast.stmt, indents: list[str]
    ) -> list[tuple[int, int, str]] | None:
        """The replaced spans inside a class or def whose body alone the port changed (None: it is
        replaced whole)."""
        if type(old) is not type(new) or not isinstance(old, _DEFS) or not _only_body_differs(old, new):
            return None
        old_block, new_block = old.body, new.body  # type: ignore[attr-defined]
        if not isinstance(old_block, cst.IndentedBlock) or not isinstance(new_block, cst.IndentedBlock):
            return None
        if not new_block.body or old_block.indent != new_block.indent or old_block.header is not new_block.header:
            return None  # an emptied body prints as ``pass``
        if not _same(old_block.footer, new_block.footer) or isinstance(old, cst.ClassDef) != isinstance(node, ast.ClassDef):
            return None
        if not isinstance(node, _AST_DEFS):
            return None
        indent = self.original.default_indent if old_block.indent is None else old_block.indent
        return self.replacements(old_block.body, new_block.body, node.body, [*indents, indent])


def _python_of(statements: Sequence[cst.BaseStatement], python: Sequence[ast.stmt], number: int) -> ast.stmt:
    """CPython's statement for ``statements[number]`` (a simple statement line holds several);
    ``first_lines`` has matched the two lists."""
    at = sum(len(s.body) if isinstance(s, cst.SimpleStatementLine) else 1 for s in statements[:number])
    return python[at]


def _only_body_differs(old: cst.CSTNode, new: cst.CSTNode) -> bool:
    """Whether ``new`` is ``old`` with another ``body``: every other field the same objects."""
    for name in old.__dataclass_fields__:  # type: ignore[attr-defined]
        if name == "body":
            continue
        before, after = getattr(old, name), getattr(new, name)
        if before is after:
            continue
        if isinstance(before, (list, tuple)) and isinstance(after, (list, tuple)) and _same(before, after):
            continue
        if isinstance(before, str) and before == after:
            continue
        return False
    return True
