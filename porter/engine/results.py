"""Per-file results: immutable and picklable, so a process pool can carry them."""

from __future__ import annotations

from dataclasses import dataclass

from porter.engine.changes import Change, Kind, Safety
from porter.engine.diffing import unified_diff


@dataclass(frozen=True)
class FileResult:
    path: str

    @property
    def ok(self) -> bool:
        return not isinstance(self, Failure)


@dataclass(frozen=True)
class Success(FileResult):
    """The port changes the file. ``old``/``new`` are the exact bytes (original encoding, newlines)."""

    old: bytes
    new: bytes
    encoding: str
    changes: tuple[Change, ...]

    @property
    def old_text(self) -> str:
        return self.old.decode(self.encoding)

    @property
    def new_text(self) -> str:
        return self.new.decode(self.encoding)

    def diff(self, display_path: str | None = None) -> str:
        shown = display_path or self.path
        return unified_diff(self.old_text, self.new_text, shown)

    @property
    def edits(self) -> int:
        return sum(1 for change in self.changes if change.kind is Kind.EDIT)

    @property
    def markers(self) -> int:
        return sum(1 for change in self.changes if change.kind is Kind.MARKER)

    @property
    def review(self) -> int:
        return sum(1 for change in self.changes if change.safety is Safety.REVIEW)


@dataclass(frozen=True)
class Unchanged(FileResult):
    """Nothing to port. ``skipped`` says why no parse was needed (``prefilter``), if so."""

    skipped: str | None = None


@dataclass(frozen=True)
class Failure(FileResult):
    """The file could not be ported; ``reason`` is one line naming the problem. Nothing was written."""

    reason: str
    kind: str = "error"

    def line(self) -> str:
        return f"{self.path}: error: {self.reason}"
