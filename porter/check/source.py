"""What the user's source says about a line: inside a logging-interval branch, or marked for review.

A host sync at step >= 1 is *per-step* (a finding) unless
- it sits inside a logging-interval branch, anywhere up the user's call stack: an ``if`` whose test
  uses ``%`` (``if step % 10 == 0``) or compares two floor divisions (``if prev // every < cur //
  every``, written out or through names the function assigns them to: torchrl's test interval), or
- porter marked the line as a deliberate sync: a ``# porter: NRN602`` marker (the sync feeds
  control flow; host_sync.py's HostSyncControlFlow) or a marker that names control flow or a
  logging interval, on the line above or at the end of the line itself.
Any other ``# porter: NRN6xx`` marker (NRN605, NRN606, NRN607) says "fix this": it excuses nothing.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator

MARKER = re.compile(r"#\s*porter:\s*(NRN6\d\d)\b(.*)")
# What a deliberate sync's marker says (rules/host_sync.py writes "... feeds control flow: ...").
DELIBERATE = re.compile(r"control flow|logging interval", re.I)


@functools.lru_cache(maxsize=256)
def _lines(path: str) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return tuple(handle.read().splitlines())
    except OSError:
        return ()


@functools.lru_cache(maxsize=256)
def interval_lines(path: str) -> frozenset[int]:
    """Line numbers inside the body of an ``if`` whose test contains a ``%`` operation or a comparison
    of two floor divisions (``_crosses_interval``)."""
    text = "\n".join(_lines(path))
    if not text:
        return frozenset()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return frozenset()
    found: set[int] = set()
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        own = list(_own_nodes(scope))
        counters = _floor_div_names(own)
        for node in own:
            if isinstance(node, ast.If) and (_has_mod(node.test) or _crosses_interval(node.test, counters)):
                for stmt in node.body:
                    end = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
                    found.update(range(stmt.lineno, end + 1))
    return frozenset(found)


def _has_mod(test: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test))


def _floor_divides(node: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv) for n in ast.walk(node))


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a module or function, not those of the functions defined in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(ast.iter_child_nodes(node))


def _floor_div_names(nodes: list[ast.AST]) -> frozenset[str]:
    """Names assigned a floor division among ``nodes`` (``cur = (i * n) // interval``)."""
    return frozenset(target.id for node in nodes if isinstance(node, ast.Assign) and _floor_divides(node.value)
                     for target in node.targets if isinstance(target, ast.Name))


def _crosses_interval(test: ast.expr, counters: frozenset[str]) -> bool:
    """A comparison of two floor divisions, written out or through names assigned one: the
    interval test of torchrl's scripts (``if (i - 1) * n // interval < i * n // interval``, or
    ``prev_test_frame < cur_test_frame`` computed so): true once per interval crossed."""
    def counted(side: ast.expr) -> bool:
        return _floor_divides(side) or any(isinstance(n, ast.Name) and n.id in counters for n in ast.walk(side))

    return any(isinstance(n, ast.Compare) and len(n.comparators) == 1 and counted(n.left) and counted(n.comparators[0])
               for n in ast.walk(test))


def marker(path: str, line: int) -> str | None:
    """The ``# porter: NRN6xx ...`` marker on the line above or on the line itself, or None."""
    lines = _lines(path)
    for number in (line - 1, line):
        if 1 <= number <= len(lines):
            match = MARKER.search(lines[number - 1])
            if match:
                return match.group(0).lstrip("# ").strip()
    return None


# compile_insert's markers where porter chose not to compile a module (NRN411-413 "not compiled ...").
DECLINED = re.compile(r"#\s*porter:\s*(NRN41\d)\s+(not compiled.*)")


def declined_compiles(path: str) -> tuple[tuple[int, str], ...]:
    """(line, marker text) of each marker in the script where porter left a module uncompiled."""
    found = []
    for number, text in enumerate(_lines(path), 1):
        match = DECLINED.search(text)
        if match:
            found.append((number, f"{match.group(1)} {match.group(2).strip()}"))
    return tuple(found)


def deliberate(text: str) -> bool:
    """True for a marker that says the sync is deliberate (control flow, a logging interval)."""
    match = MARKER.search("# " + text)
    if match is None:
        return False
    said = match.group(2).strip()
    # The host-sync rules start a deliberate sync's marker with "deliberate:" (NRN602/603/604).
    return match.group(1) == "NRN602" or said.startswith("deliberate:") or bool(DELIBERATE.search(said))


def marked(path: str, line: int) -> bool:
    """True when a deliberate-sync marker is on the line above or on the line itself."""
    found = marker(path, line)
    return found is not None and deliberate(found)


def excused(stack: list[tuple[str, int]]) -> str | None:
    """Why a sync with this user call stack is not a per-step sync (None: it is one)."""
    for file, line in stack:
        if line in interval_lines(file):
            return "logging interval"
        found = marker(file, line)
        if found is not None and deliberate(found):
            return f"marked deliberate: {found}"
    return None


def review_marker(stack: list[tuple[str, int]]) -> str | None:
    """A "fix this" marker (NRN605/606/607) on the sync's stack: shown with the finding."""
    for file, line in stack:
        found = marker(file, line)
        if found is not None and not deliberate(found):
            return found
    return None


def source_line(path: str | None, line: int | None) -> str:
    if not path or not line:
        return ""
    lines = _lines(path)
    return lines[line - 1].strip() if 1 <= line <= len(lines) else ""
