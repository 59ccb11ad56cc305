"""Applying part of a port: ``--safe-only`` (only ``safe`` changes) and ``--interactive`` (the
hunks a person accepts). A filter that runs before the sinks, on each changed file.

A port's diff is cut into hunks (each run of changed lines, no context) and each change is
attached to the hunk at its line (a marker: the lines inserted above it). A hunk no change sits
in (an import added or removed for the port) goes with the changes whose imports it names, else
with every change of the file. The chosen hunks are applied to the original text, and the result
is only kept when it is a true intermediate state of the same port:

- it parses, and no name an import line removed by the port still bound is used in it (a
  removal hunk whose name is still used is not applied: the import stays);
- porting it again gives exactly the full port (the skipped changes are still to be made by a
  later run, and the applied ones do not depend on a skipped one).

Otherwise the file is left as it was, with a message saying why. A notebook's changes sit at
cell lines, not lines of its JSON: it is applied whole or not at all.
"""

from __future__ import annotations

import ast
import difflib
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from porter.engine.changes import Change, Safety
from porter.engine.results import FileResult, Finding, Success, Unchanged


@dataclass(frozen=True)
class Hunk:
    """Old lines ``start:end`` (0-based) replaced by ``new``; ``changes`` are what it applies.
    A support hunk (an import) applies no change of its own: it goes with the changes it ``serves``."""

    start: int
    end: int
    old: tuple[str, ...]
    new: tuple[str, ...]
    changes: tuple[Change, ...]
    serves: tuple[Change, ...] = ()

    @property
    def safety(self) -> Safety:
        return Safety.REVIEW if any(change.safety is Safety.REVIEW for change in self.changes) else Safety.SAFE

    @property
    def codes(self) -> list[str]:
        return sorted({change.code for change in self.changes})

    def text(self) -> str:
        """The hunk as a unified-diff body (``-old`` / ``+new`` lines)."""
        body = [f"@@ -{self.start + 1},{self.end - self.start} +{len(self.new)} @@\n"]
        body += ["-" + line if line.endswith("\n") else f"-{line}\n" for line in self.old]
        body += ["+" + line if line.endswith("\n") else f"+{line}\n" for line in self.new]
        return "".join(body)


@dataclass(frozen=True)
class Selection:
    """What was applied of one file's port: ``result`` (the original when nothing), the
    ``skipped`` changes, and ``refused`` (why nothing could be applied) if so."""

    result: FileResult
    skipped: tuple[Change, ...] = ()
    refused: str | None = None


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def split(result: Success) -> list[Hunk]:
    """The hunks of ``result``'s diff, each with the changes it applies."""
    old, new = _lines(result.old_text), _lines(result.new_text)
    spans = [
        span
        for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
        if op[0] != "equal"
        for span in _paired(old, new, *op[1:])
    ]
    owned: list[list[Change]] = [[] for _ in spans]
    for change in result.changes:
        if spans:
            owned[min(range(len(spans)), key=lambda i: _distance(spans[i][1], spans[i][2], change.line))].append(change)
    hunks = []
    for index, (_, i1, i2, j1, j2) in enumerate(spans):
        serves: list[Change] = []
        if not owned[index]:  # a support hunk: the imports of the changes it names, or all of them
            text = "".join(old[i1:i2] + new[j1:j2])
            serves = [c for c in result.changes if any(_names(spec.module, text) for spec in c.imports)] or _nearest(spans, owned, index)
        hunks.append(Hunk(i1, i2, tuple(old[i1:i2]), tuple(new[j1:j2]), tuple(owned[index]), tuple(serves)))
    return hunks


def _paired(old: list[str], new: list[str], i1: int, i2: int, j1: int, j2: int) -> list[tuple[str, int, int, int, int]]:
    """A block of changed lines cut into line-for-line hunks where old and new lines pair up
    (similar text, in order); the lines between pairs stay hunks of their own."""
    spans: list[tuple[str, int, int, int, int]] = []
    i, j = i1, j1
    while i < i2:
        match = next((k for k in range(j, j2) if difflib.SequenceMatcher(None, old[i], new[k]).ratio() > 0.6), None)
        if match is None:
            spans.append(("delete", i, i + 1, j, j))
        else:
            if match > j:
                spans.append(("insert", i, i, j, match))
            spans.append(("replace", i, i + 1, match, match + 1))
            j = match + 1
        i += 1
    if j < j2:
        spans.append(("insert", i2, i2, j, j2))
    return _merged(spans)


def _merged(spans: list[tuple[str, int, int, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """Consecutive deletions (and insertions) as one hunk: a removed statement of several lines."""
    out: list[tuple[str, int, int, int, int]] = []
    for span in spans:
        if out and span[0] == out[-1][0] != "replace" and out[-1][2] == span[1] and out[-1][4] == span[3]:
            out[-1] = (span[0], out[-1][1], span[2], out[-1][3], span[4])
        else:
            out.append(span)
    return out


def _nearest(spans: list[tuple[str, int, int, int, int]], owned: list[list[Change]], index: int) -> list[Change]:
    """The changes of the closest hunk that has some (a re-indented line goes with the block
    rewrite beside it); every change when none has."""
    start = spans[index][1]
    candidates = [i for i in range(len(spans)) if owned[i]]
    if not candidates:
        return [change for changes in owned for change in changes]
    best = min(candidates, key=lambda i: (abs(spans[i][1] - start), i > index))
    return owned[best]


def by_statement(result: Success, hunks: list[Hunk]) -> list[Hunk]:
    """Hunks inside one statement of several lines merged: half a statement never parses."""
    spans = _statement_spans(result.old_text)
    if not spans:
        return hunks
    old = _lines(result.old_text)
    merged: list[Hunk] = []
    for hunk in hunks:
        last = merged[-1] if merged else None
        if last is not None and any(_touches(last, span) and _touches(hunk, span) for span in spans):
            middle = tuple(old[last.end : hunk.start])
            merged[-1] = Hunk(
                last.start, hunk.end, tuple(old[last.start : hunk.end]), last.new + middle + hunk.new,
                last.changes + hunk.changes, tuple(dict.fromkeys(last.serves + hunk.serves)),
            )
        else:
            merged.append(hunk)
    return [replace(hunk, serves=()) if hunk.changes else hunk for hunk in merged]


def _statement_spans(text: str) -> list[tuple[int, int]]:
    """1-based line spans of the statements (a compound one: its header) that take several lines."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        last = body[0].lineno - 1 if isinstance(body, list) and body and isinstance(body[0], ast.stmt) else node.end_lineno or node.lineno
        if last > node.lineno:
            spans.append((node.lineno, last))
    return spans


def _touches(hunk: Hunk, span: tuple[int, int]) -> bool:
    """Whether the hunk changes a line of ``span`` (an insertion: strictly inside it)."""
    if hunk.end > hunk.start:
        return hunk.start + 1 <= span[1] and hunk.end >= span[0]
    return span[0] < hunk.start + 1 <= span[1]


def _distance(start: int, end: int, line: int) -> int:
    """How far 1-based ``line`` is from old lines ``start:end`` (an insertion sits before start+1)."""
    first, last = start + 1, max(end, start + 1)
    return 0 if first <= line <= last else min(abs(line - first), abs(line - last))


def _names(module: str, text: str) -> bool:
    return f"import {module}" in text or f"from {module} import" in text


def compose(result: Success, hunks: Sequence[Hunk], keep: Sequence[bool]) -> str:
    """The original text with the kept hunks applied."""
    old = _lines(result.old_text)
    out: list[str] = []
    at = 0
    for hunk, kept in zip(hunks, keep):
        out += old[at : hunk.start]
        out += hunk.new if kept else hunk.old
        at = hunk.end
    return "".join(out + old[at:])


Chooser = Callable[[Sequence[Hunk]], "list[bool] | None"]


def select(
    result: Success,
    keep: Chooser,
    report: Callable[[bytes], FileResult],
    kind: str = "py",
    verify: Callable[[bytes], tuple[Finding, ...]] | None = None,
) -> Selection:
    """Apply the hunks ``keep`` chooses among those that apply changes (None: stop, apply
    nothing) when the outcome is a true intermediate of the port (see the module docstring).
    ``report(data)`` ports ``data`` again; ``verify(data)``: the post-port verifier's findings on
    the part applied (none without it); ``kind``: ``py``, ``ipynb`` or ``file``."""
    hunks = split(result)
    if kind == "py":
        hunks = by_statement(result, hunks)
    if kind == "ipynb":  # one hunk: a notebook's change lines are cell lines
        hunks = [Hunk(0, 0, (), (), result.changes)]
    shown = [hunk for hunk in hunks if hunk.changes]
    picked = keep(shown)
    if picked is None or not any(picked):
        return Selection(result_unchanged(result), result.changes)
    if all(picked):
        return Selection(result)
    if kind == "ipynb":
        return Selection(result_unchanged(result), result.changes)
    applied = {change for hunk, kept in zip(shown, picked) if kept for change in hunk.changes}
    pick = {id(hunk): kept for hunk, kept in zip(shown, picked)}
    chosen = [pick[id(hunk)] if hunk.changes else bool(set(hunk.serves) & applied) for hunk in hunks]
    chosen = _keep_used_imports(result, hunks, chosen) if kind == "py" else chosen
    text = compose(result, hunks, chosen)
    data = text.encode(result.encoding)
    why = _not_intermediate(result, text, data, report, python=kind == "py")
    if why is not None:
        return Selection(result_unchanged(result), result.changes, why)
    kept = tuple(change for change in result.changes if change in applied)
    skipped = tuple(change for change in result.changes if change not in applied)
    findings = verify(data) if verify is not None else ()
    return Selection(replace(result, new=data, changes=kept, findings=findings), skipped)


def result_unchanged(result: Success) -> FileResult:
    return Unchanged(result.path, skipped="not applied")


def _keep_used_imports(result: Success, hunks: Sequence[Hunk], chosen: list[bool]) -> list[bool]:
    """Do not apply a hunk that removes an import whose name the composed text still uses."""
    for index, hunk in enumerate(hunks):
        if not chosen[index] or not hunk.old:
            continue
        bound = _bound_names("".join(hunk.old)) - _bound_names("".join(hunk.new))
        if bound and bound & _used_names(compose(result, hunks, chosen)):
            chosen[index] = False
    return chosen


def _bound_names(text: str) -> set[str]:
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _used_names(text: str) -> set[str]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _not_intermediate(result: Success, text: str, data: bytes, report: Callable[[bytes], FileResult], python: bool) -> str | None:
    if python:
        try:
            ast.parse(text)
        except SyntaxError as error:
            return f"the changes kept do not parse without the others (line {error.lineno})"
    again = report(data)
    if not isinstance(again, Success) or again.new != result.new:
        return "the changes kept depend on changes skipped (porting the result again would not give the same port)"
    return None
