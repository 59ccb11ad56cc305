"""The record of a batch run, and its JSON report (``--report FILE.json``).

``RunRecord`` collects, per file, what the port did (changes or the failure) and which repository
the file belongs to; the SARIF and Markdown reports render the same record. The JSON holds every
change (code, file, line, column, message, safety, kind), every failure, and a summary per
repository with a porting-effort score:

    effort = 1 x safe edit + 3 x edit to review + 5 x review marker left + 8 x file that failed

(a marker is code porter could not port: a human ports it, whether this run or an earlier one
left it — a second run over a ported tree counts the old markers, ``reports.markers``; a failed
file needs a look before anything). Levels: 0 none, up to 10 small, up to 50 medium, above that large.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from porter import __version__
from porter.engine.changes import Change, Kind, Safety
from porter.engine.results import Failure, FileResult, Finding, Success, Unchanged
from porter.reports.markers import Marker, file_markers

EFFORT_WEIGHTS = {"safe_edit": 1, "review_edit": 3, "marker": 5, "failure": 8}
EFFORT_LEVELS = ((0, "none"), (10, "small"), (50, "medium"))


@dataclass(frozen=True)
class FileRecord:
    path: str  # relative to the repository root, '/'-separated
    repo: str  # the repository's name or remote (``gitops.repo_name``)
    status: str  # changed | unchanged | failed
    changes: tuple[Change, ...] = ()
    failure: str | None = None
    failure_kind: str | None = None
    skipped: str | None = None
    findings: tuple[Finding, ...] = ()  # the post-port verifier's, at lines of the output
    not_applied: tuple[Change, ...] = ()  # changes of the port left out (``--safe-only``, ``--interactive``)
    earlier_markers: tuple[Marker, ...] = ()  # ``# porter:`` markers an earlier run left in the output

    @property
    def markers(self) -> int:
        """Every marker the output holds: this run's (its marker changes) and earlier ones."""
        return sum(1 for change in self.changes if change.kind is Kind.MARKER) + len(self.earlier_markers)


@dataclass
class RunRecord:
    files: list[FileRecord] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    finished: float | None = None
    options: dict[str, object] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    cache_hits: int = 0

    def add(self, result: FileResult, repo: str, name: str | None = None, not_applied: Sequence[Change] = ()) -> None:
        """``repo``: the folder paths are relative to; ``name``: how the report names it;
        ``not_applied``: the changes of the port that were left out."""
        relative = escaped(_relative(result.path, repo))
        repo = escaped(name or repo)
        findings = tuple(replace(f, path=relative) for f in getattr(result, "findings", ()))
        left = tuple(_rebased(not_applied, relative))
        earlier = file_markers(result).earlier
        if isinstance(result, Success):
            self.files.append(
                FileRecord(
                    relative, repo, "changed", tuple(_rebased(result.changes, relative)),
                    findings=findings, not_applied=left, earlier_markers=earlier,
                )
            )
        elif isinstance(result, Failure):
            self.files.append(FileRecord(relative, repo, "failed", failure=escaped(result.reason), failure_kind=result.kind))
        else:
            skipped = result.skipped if isinstance(result, Unchanged) else None
            self.files.append(
                FileRecord(relative, repo, "unchanged", skipped=skipped, findings=findings, not_applied=left, earlier_markers=earlier)
            )

    @property
    def repos(self) -> list[str]:
        return sorted({record.repo for record in self.files})

    def changes(self, repo: str | None = None) -> list[Change]:
        return [change for record in self.files if repo in (None, record.repo) for change in record.changes]

    def findings(self, repo: str | None = None) -> list[Finding]:
        return [finding for record in self.files if repo in (None, record.repo) for finding in record.findings]

    def earlier_markers(self, repo: str | None = None) -> list[tuple[str, Marker]]:
        """(path, marker) for every marker an earlier run left in this run's output."""
        return [(record.path, marker) for record in self.files if repo in (None, record.repo) for marker in record.earlier_markers]


def findings_by_kind(findings: Iterable[Finding]) -> dict[str, int]:
    return dict(sorted(Counter(f.kind.value for f in findings).items()))


def escaped(text: str) -> str:
    """``text`` fit for any report: the bytes of a name that is not UTF-8 (surrogate escapes)
    written as ``\\xNN``, so every report is valid UTF-8 and names stay recognisable."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def _relative(path: str, repo: str) -> str:
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, repo)
    except ValueError:  # another drive (Windows)
        return absolute.replace(os.sep, "/")
    if relative.startswith(".."):
        return absolute.replace(os.sep, "/")
    return relative.replace(os.sep, "/")


def _rebased(changes: Iterable[Change], path: str) -> Iterable[Change]:
    from dataclasses import replace

    return (replace(change, path=path) for change in changes)


def effort(changes: Sequence[Change], failures: int, earlier_markers: int = 0) -> dict[str, object]:
    safe_edits = sum(1 for c in changes if c.kind is Kind.EDIT and c.safety is Safety.SAFE)
    review_edits = sum(1 for c in changes if c.kind is Kind.EDIT and c.safety is Safety.REVIEW)
    markers = sum(1 for c in changes if c.kind is Kind.MARKER) + earlier_markers
    score = (
        EFFORT_WEIGHTS["safe_edit"] * safe_edits
        + EFFORT_WEIGHTS["review_edit"] * review_edits
        + EFFORT_WEIGHTS["marker"] * markers
        + EFFORT_WEIGHTS["failure"] * failures
    )
    level = next((name for limit, name in EFFORT_LEVELS if score <= limit), "large")
    return {
        "score": score,
        "level": level,
        "safe_edits": safe_edits,
        "review_edits": review_edits,
        "markers": markers,
        "earlier_markers": earlier_markers,  # of ``markers``, those an earlier run left
        "failures": failures,
        "weights": dict(EFFORT_WEIGHTS),
    }


def repo_summary(record: RunRecord, repo: str) -> dict[str, object]:
    files = [f for f in record.files if f.repo == repo]
    changes = record.changes(repo)
    failures = sum(1 for f in files if f.status == "failed")
    return {
        "root": repo,
        "files": len(files),
        "changed": sum(1 for f in files if f.status == "changed"),
        "unchanged": sum(1 for f in files if f.status == "unchanged"),
        "failed": failures,
        "changes": len(changes),
        "by_code": dict(sorted(Counter(c.code for c in changes).items())),
        "by_safety": dict(sorted(Counter(c.safety.value for c in changes).items())),
        "verifier": findings_by_kind(record.findings(repo)),
        "markers": _marker_totals(files),
        "effort": effort(changes, failures, len(record.earlier_markers(repo))),
    }


def _marker_totals(files: Iterable[FileRecord]) -> dict[str, int]:
    """Markers to review in the output: all of them, and of those the ones an earlier run left."""
    kept = list(files)
    return {"total": sum(f.markers for f in kept), "earlier": sum(len(f.earlier_markers) for f in kept)}


def to_json(record: RunRecord) -> dict[str, object]:
    changes = [_change(record_file, change) for record_file in record.files for change in record_file.changes]
    failures = [
        {"repo": f.repo, "path": f.path, "kind": f.failure_kind, "reason": f.failure}
        for f in record.files
        if f.status == "failed"
    ]
    all_changes = record.changes()
    not_applied = [_change(f, change) for f in record.files for change in f.not_applied]
    return {
        "tool": {"name": "porter", "version": __version__},
        "command": record.command,
        "started": _iso(record.started),
        "finished": _iso(record.finished or time.time()),
        "options": record.options,
        "totals": {
            "files": len(record.files),
            "changed": sum(1 for f in record.files if f.status == "changed"),
            "failed": len(failures),
            "changes": len(all_changes),
            "not_applied": len(not_applied),
            "cache_hits": record.cache_hits,
            "verifier": findings_by_kind(record.findings()),
            "markers": _marker_totals(record.files),
            "effort": effort(all_changes, len(failures), len(record.earlier_markers())),
        },
        "repos": [repo_summary(record, repo) for repo in record.repos],
        "changes": changes,
        # Changes of the port left out by --safe-only / --interactive: a later run makes them.
        "not_applied": not_applied,
        "failures": failures,
        # Every file with what the post-port verifier found in it (empty: nothing), the markers
        # its output holds and, of those, the ones an earlier run left (line of the output).
        "files": [
            {
                "repo": f.repo, "path": f.path, "status": f.status,
                "verifier": [finding.to_dict() for finding in f.findings],
                "markers": f.markers,
                "earlier_markers": [{"line": m.line, "code": m.code, "message": m.message} for m in f.earlier_markers],
            }
            for f in record.files
        ],
    }


def _change(record_file: FileRecord, change: Change) -> dict[str, object]:
    data = change.to_dict()
    data["repo"] = record_file.repo
    return data


def _iso(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def render(record: RunRecord) -> str:
    return json.dumps(to_json(record), indent=2, sort_keys=False) + "\n"
