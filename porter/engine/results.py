"""Per-file results: immutable and picklable, so a process pool can carry them."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from porter.engine.changes import Change, Kind, Safety
from porter.engine.diffing import unified_diff
from porter.engine.markers import FileMarkers


class FindingKind(str, enum.Enum):
    """What the post-port verifier (``porter.engine.verify``) found in a port's output.

    ``cuda-only``: CUDA-only code reachable on Neuron with no ``# porter:`` marker above it;
    ``neuron-api``: a ``torch.neuron.*`` name or call the real module does not have or bind;
    ``cpu-fallback``: the original chose the CPU when no accelerator is present, the port does not.
    """

    CUDA_ONLY = "cuda-only"
    NEURON_API = "neuron-api"
    CPU_FALLBACK = "cpu-fallback"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Finding:
    """One verifier finding at a line of the port's *output* (the file as written)."""

    kind: FindingKind
    path: str
    line: int
    message: str
    code: str | None = None  # the rule code that ports or marks this construct, if one does

    def location(self) -> str:
        return f"{self.path}:{self.line}"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind.value, "path": self.path, "line": self.line, "message": self.message, "code": self.code}


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
    findings: tuple[Finding, ...] = ()  # the verifier's, on ``new``
    marks: FileMarkers | None = None  # the output's ``# porter:`` markers, once counted

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
    findings: tuple[Finding, ...] = ()  # the verifier's, on the file as it is (empty when not parsed)
    marks: FileMarkers | None = None  # the file's ``# porter:`` markers, once counted


@dataclass(frozen=True)
class Failure(FileResult):
    """The file could not be ported; ``reason`` is one line naming the problem. Nothing was written."""

    reason: str
    kind: str = "error"

    def line(self) -> str:
        return f"{self.path}: error: {self.reason}"

    @classmethod
    def internal(cls, path: str, error: BaseException) -> Failure:
        """A bug in porter met on this file (a batch goes on): the error and where it was raised."""
        import traceback

        where = traceback.extract_tb(error.__traceback__)[-1]
        return cls(
            path,
            f"internal error ({type(error).__name__}: {error}) at {where.filename}:{where.lineno}; "
            "the file was left as it was — please report it",
            kind="internal",
        )
