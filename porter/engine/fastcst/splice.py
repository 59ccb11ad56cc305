"""The ported file's text from the original text and the top-level statements the port rebuilt.

The edit applier keeps every statement it did not enter as the same object, so the ported
module's body is the original's with some runs of statements replaced. Generating the whole
module's code costs a fifth of a parse, and checking that libcst reproduces the original costs
as much again; here only the replaced runs are generated, and everything else is the original
text itself — every byte the port does not own is kept as it was, not as libcst prints it.

Where each top-level statement starts comes from CPython's ``ast`` of the original (already
parsed by the engine's depth check): the first line of the statement (of its first decorator),
minus the comment and blank lines libcst attaches above it. Each replaced run is checked: the
original text there must be exactly libcst's code for the run's original statements. Anything
this cannot place or check (a changed module header or footer, an emptied module, statements added with none
replaced, the last statement of a file without a final newline, a statement count that does not
match the ``ast``) answers None: the caller generates the whole module instead.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import libcst as cst

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
    lines = first_lines(original.body, tree.body)
    if lines is None:
        return None
    line_starts = [0, *(match.end() for match in _NEWLINE.finditer(text))]
    if any(not 1 <= line <= len(line_starts) for line in lines):
        return None
    old_body = original.body
    number = {id(statement): i for i, statement in enumerate(old_body)}
    # Runs: (first original replaced, last original replaced + 1, the new statements in their place).
    runs: list[tuple[int, int, list[cst.BaseStatement]]] = []
    kept = -1  # the original number of the last statement kept
    pending: list[cst.BaseStatement] = []
    for statement in [*new.body, None]:
        i = len(old_body) if statement is None else number.get(id(statement))
        if i is None:
            pending.append(statement)  # type: ignore[arg-type]
            continue
        if i <= kept:
            return None  # reordered: not a replacement
        if i > kept + 1 or pending:
            if i == kept + 1:
                return None  # statements added with none replaced: no text to anchor them at
            runs.append((kept + 1, i, pending))
        kept, pending = i, []
    if not runs:
        return None
    if runs[-1][1] == len(old_body) and not original.has_trailing_newline:
        return None  # libcst drops the last statement's newline there
    pieces: list[str] = []
    done = 0
    for first, end, statements in runs:
        start = line_starts[lines[first] - 1]
        old = "".join(original.code_for_node(statement) for statement in old_body[first:end])
        stop = start + len(old)
        if text[start:stop] != old or (end < len(old_body) and line_starts[lines[end] - 1] != stop):
            return None
        pieces += [text[done:start], *(new.code_for_node(statement) for statement in statements)]
        done = stop
    pieces.append(text[done:])
    return "".join(pieces)
