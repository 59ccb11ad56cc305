"""Turning results into terminal text. The library never prints; commands call these."""

from __future__ import annotations

from collections.abc import Iterable

import click

from porter.engine.changes import Change, Safety
from porter.engine.results import Failure, FileResult, Finding, FindingKind, Success
from porter.reports.markers import MarkerTally, tally


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


def statistics(results: Iterable[FileResult]) -> list[str]:
    """Changes per code, most frequent first, as ruff's ``--statistics``: ``  12  NRN101  summary``."""
    from collections import Counter

    from porter.engine.registry import code_summary

    counts = Counter(change.code for result in results if isinstance(result, Success) for change in result.changes)
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"{count:>4}  {code:<7} {code_summary(code)}".rstrip())
    return lines


def finding_line(finding: Finding) -> str:
    """A verifier finding, as the change lines are: ``FILE:LINE verify/KIND message``."""
    code = f" ({finding.code})" if finding.code else ""
    return f"{finding.location()} verify/{finding.kind.value} {finding.message}{code}"


def findings_of(results: Iterable[FileResult]) -> list[Finding]:
    return [finding for result in results for finding in getattr(result, "findings", ())]


def verifier_summary(results: Iterable[FileResult], markers: MarkerTally | None = None) -> str:
    """What a reader of "0 to review" must also know: what the port left that cannot run on Neuron,
    and every ``# porter:`` marker the output holds, this run's and an earlier run's (``markers``:
    counted while the results still held their bytes; else counted from ``results``)."""
    kept = list(results)
    found = findings_of(kept)
    count = {kind: sum(1 for f in found if f.kind is kind) for kind in FindingKind}
    markers = markers if markers is not None else tally(kept)
    parts = [f"{count[FindingKind.CUDA_ONLY]} CUDA-only left unmarked", markers.words()]
    if count[FindingKind.NEURON_API]:
        parts.append(f"{count[FindingKind.NEURON_API]} torch.neuron call(s) the real API rejects")
    if count[FindingKind.CPU_FALLBACK]:
        parts.append(f"{count[FindingKind.CPU_FALLBACK]} lost CPU fallback(s)")
    return "Verifier: " + ", ".join(parts) + "."


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
