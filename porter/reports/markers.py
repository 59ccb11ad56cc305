"""The ``# porter:`` markers each output file holds: the ones this run added and the ones an earlier
run left (a second ``porter migrate`` on a ported tree adds none, yet every old marker is still
code a human must port). A summary that says "0 to review" over a tree of old markers misleads.

A file's markers are read from its text with the verifier's reading
(``porter.engine.markers.marker_comments``, libcst-free; a notebook's code cells). An unchanged file's output is
its bytes on disk (a file with nothing left to port is not rewritten, but its old markers count):
all of them are an earlier run's. In a changed file, a marker of the output that the input held
too (same code and message) is an earlier one; the others are this run's, at least as many as
its ``Kind.MARKER`` changes (a JSON config's markers are not written: JSON has no comments).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from porter.engine.changes import Kind
from porter.engine.markers import FileMarkers, Marker, marker_comments
from porter.engine.results import Failure, FileResult, Success, Unchanged

_CELL = re.compile(r"^\[cell \d+\] ")  # how a notebook's changes name their cell
_PYTHON = (".py", ".pyi", ".pyw")


def file_markers(result: FileResult, data: bytes | None = None) -> FileMarkers:
    """The markers of ``result``'s output (a failed file's output is its input: nothing counts);
    ``data``: an unchanged file's bytes, when at hand (else read from its path). A result that
    carries its count (``counted``) is not read again."""
    if isinstance(result, Failure):
        return FileMarkers(0, ())
    carried = getattr(result, "marks", None)
    if carried is not None:
        return carried
    if not isinstance(result, Success):  # unchanged: the output is the file as it is
        return FileMarkers(0, tuple(_markers_in(_read(result.path) if data is None else data, result.path)))
    before = Counter(_key(marker) for marker in _markers_in(result.old, result.path))
    earlier, written = [], 0
    for marker in _markers_in(result.new, result.path):
        if before[_key(marker)]:
            before[_key(marker)] -= 1
            earlier.append(marker)
        else:
            written += 1
    # In Python and notebooks the comments written are the count (two edits of one statement with
    # the same advice write one comment; NRN603's "deliberate" note is a comment of its own).
    # Elsewhere a marker change may write no comment (a JSON config has none): the larger count.
    if result.path.lower().endswith((*_PYTHON, ".ipynb")):
        return FileMarkers(written, tuple(earlier))
    recorded = sum(1 for change in result.changes if change.kind is Kind.MARKER)
    return FileMarkers(max(written, recorded), tuple(earlier))


def counted(result: FileResult, data: bytes) -> FileResult:
    """``result`` (of the file that held ``data``) carrying its markers: counted once, where the
    file was ported (a worker), so the summary and a cached re-run never tokenize it again."""
    if isinstance(result, (Success, Unchanged)) and result.marks is None:
        return replace(result, marks=file_markers(result, data))
    return result


def _key(marker: Marker) -> tuple[str, str]:
    return marker.code, _CELL.sub("", marker.message)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:  # gone or unreadable since the port read it: no markers to show
        return b""


def _markers_in(data: bytes, path: str) -> list[Marker]:
    if b"porter:" not in data:
        return []
    text = data.decode("utf-8", "replace")
    if path.lower().endswith(".ipynb"):
        return _notebook_markers(text)
    suffix = os.path.splitext(path)[1].lower()
    python = suffix in _PYTHON or not suffix  # a script without a suffix: tokenized, lines if that fails
    return [Marker(*found) for found in marker_comments(text, python=python)]


def _notebook_markers(text: str) -> list[Marker]:
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError:
        return []
    cells = notebook.get("cells", []) if isinstance(notebook, dict) else []
    found = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        found += [Marker(line, code, f"[cell {number}] {message}") for line, code, message in marker_comments(source)]
    return found


class MarkerTally:
    """Markers over a run, file by file (the summary line's count)."""

    def __init__(self) -> None:
        self.added = 0
        self.earlier = 0

    def add(self, result: FileResult) -> FileMarkers:
        found = file_markers(result)
        self.added += found.added
        self.earlier += len(found.earlier)
        return found

    @property
    def total(self) -> int:
        return self.added + self.earlier

    def words(self) -> str:
        """``3 markers to review (2 from an earlier run)``."""
        text = f"{self.total} marker{'s' if self.total != 1 else ''} to review"
        return text + (f" ({self.earlier} from an earlier run)" if self.earlier else "")


def tally(results: Iterable[FileResult]) -> MarkerTally:
    counted = MarkerTally()
    for result in results:
        counted.add(result)
    return counted
