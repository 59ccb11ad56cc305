"""What the user's source says about a line: inside a logging-interval branch, or marked for review.

A host sync at step >= 1 is *per-step* (a finding) unless
- it sits inside a logging-interval branch: an ``if`` whose test uses ``%`` (``if step % 10 == 0``),
  anywhere up the user's call stack, or
- porter marked the line as a deliberate control-flow sync: a ``# porter: NRN6xx`` review comment on
  the line above (or at the end of the line itself).
"""

from __future__ import annotations

import ast
import functools
import re

MARKER = re.compile(r"#\s*porter:\s*NRN6\d\d")


@functools.lru_cache(maxsize=256)
def _lines(path: str) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return tuple(handle.read().splitlines())
    except OSError:
        return ()


@functools.lru_cache(maxsize=256)
def interval_lines(path: str) -> frozenset[int]:
    """Line numbers inside the body of an ``if`` whose test contains a ``%`` operation."""
    text = "\n".join(_lines(path))
    if not text:
        return frozenset()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return frozenset()
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _has_mod(node.test):
            for stmt in node.body:
                end = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
                found.update(range(stmt.lineno, end + 1))
    return frozenset(found)


def _has_mod(test: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test))


def marked(path: str, line: int) -> bool:
    """True when a ``# porter: NRN6xx`` marker is on the line above or on the line itself."""
    lines = _lines(path)
    for number in (line - 1, line):
        if 1 <= number <= len(lines) and MARKER.search(lines[number - 1]):
            return True
    return False


def excused(stack: list[tuple[str, int]]) -> str | None:
    """Why a sync with this user call stack is not a per-step sync (None: it is one)."""
    for file, line in stack:
        if line in interval_lines(file):
            return "logging interval"
        if marked(file, line):
            return "marked by porter (control flow)"
    return None


def source_line(path: str | None, line: int | None) -> str:
    if not path or not line:
        return ""
    lines = _lines(path)
    return lines[line - 1].strip() if 1 <= line <= len(lines) else ""
