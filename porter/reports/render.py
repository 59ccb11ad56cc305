"""Turning results into terminal text. The library never prints; commands call these."""

from __future__ import annotations

from collections.abc import Iterable

import click

from porter.engine.changes import Change, Safety
from porter.engine.results import Failure, FileResult, Success


def colour_diff(diff: str) -> str:
    out: list[str] = []
    for line in diff.splitlines(keepends=True):
        body, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        if line.startswith(("+++", "---")):
            out.append(click.style(body, bold=True) + end)
        elif line.startswith("@@"):
            out.append(click.style(body, fg="cyan") + end)
        elif line.startswith("+"):
            out.append(click.style(body, fg="green") + end)
        elif line.startswith("-"):
            out.append(click.style(body, fg="red") + end)
        else:
            out.append(line)
    return "".join(out)


def change_line(change: Change, path: str | None = None) -> str:
    tag = " [review]" if change.safety is Safety.REVIEW else ""
    return f"{path or change.path}:{change.line} {change.code} {change.message}{tag}"


def summary(results: Iterable[FileResult], verb: str) -> str:
    changed = unchanged = failed = changes = review = 0
    for result in results:
        if isinstance(result, Success):
            changed += 1
            changes += len(result.changes)
            review += result.review
        elif isinstance(result, Failure):
            failed += 1
        else:
            unchanged += 1
    parts = [
        f"{changed} file{'s' if changed != 1 else ''} {verb}"
        + (f" ({changes} change{'s' if changes != 1 else ''}, {review} to review)" if changed else ""),
        f"{unchanged} unchanged",
    ]
    if failed:
        parts.append(f"{failed} error{'s' if failed != 1 else ''}")
    return ", ".join(parts) + "."
