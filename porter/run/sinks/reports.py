"""``--report FILE`` (repeatable): the run's record rendered as JSON, SARIF or Markdown by the
file's extension. Names are escaped in the record (``reports.json_report``), and a report that
cannot be rendered or written is a per-output error: sources already written stay written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from porter.engine.results import FileResult
from porter.reports.json_report import RunRecord
from porter.run.sinks import Item, Outputs, Sink, write_output

if TYPE_CHECKING:
    from porter.run.batch import Stats

REPORT_SUFFIXES = (".json", ".sarif", ".md", ".markdown")


def report_format(path: str) -> str | None:
    lowered = path.lower()
    if lowered.endswith(".json"):
        return "json"
    if lowered.endswith(".sarif"):
        return "sarif"
    if lowered.endswith((".md", ".markdown")):
        return "markdown"
    return None


def render(path: str, record: RunRecord) -> str:
    return render_as(report_format(path), record, path)


def render_as(kind: str | None, record: RunRecord, path: str = "-") -> str:
    if kind == "json":
        from porter.reports.json_report import render as json_render

        return json_render(record)
    if kind == "sarif":
        from porter.reports.sarif import render as sarif_render

        return sarif_render(record)
    if kind == "markdown":
        from porter.reports.markdown import render as markdown_render

        return markdown_render(record)
    raise ValueError(f"--report {path}: unknown format (use .json, .sarif or .md)")


class Reports(Sink):
    def __init__(self, paths: Sequence[str], record: RunRecord, outputs: Outputs, stats: Stats, stdout: str | None = None) -> None:
        self.paths = list(paths)
        self.stdout = stdout  # a format: that report goes to ``outputs.stdout``
        self.names: dict[str, str] = {}  # repository folder -> the name reports show
        self.record = record
        self.outputs = outputs
        self.stats = stats

    def accept(self, item: Item, result: FileResult, diff: str) -> FileResult:
        self.record.add(result, item.repo, self._name(item.repo), item.skipped)
        return result

    def _name(self, repo: str) -> str:
        """The repository's name or remote; two inputs of the same name get ``name (2)``."""
        if repo not in self.names:
            from porter.run.gitops import repo_name

            name, taken = repo_name(repo), set(self.names.values())
            count = 1
            while (f"{name} ({count})" if count > 1 else name) in taken:
                count += 1
            self.names[repo] = f"{name} ({count})" if count > 1 else name
        return self.names[repo]

    def finish(self) -> None:
        self.record.cache_hits = self.stats.cache_hits
        for path in self.paths:
            try:
                text = render(path, self.record)
            except Exception as error:  # a report must never turn a finished port into a crash
                self.outputs.fail(path, f"{path}: error: cannot render the report: {type(error).__name__}: {error}")
                continue
            write_output(path, text.encode("utf-8", "backslashreplace"), self.outputs)
        if self.stdout:
            self.outputs.stdout.append(render_as(self.stdout, self.record))
