"""Where a migration's results go. Each sink has one job and sees every file in order:

- ``InPlace`` (``--write``): replace each ported file atomically;
- ``Mirror`` (``--out``): a faithful, runnable copy of each input below a folder;
- ``Patch`` (``--patch``): one patch of every change;
- ``GitBranch`` (``--git-branch``): per repository, a branch with the port committed;
- ``Reports`` (``--report``): JSON, SARIF and Markdown reports of the run.

``accept`` is called once per file, in order, and returns the result to report (a write that
failed turns a ``Success`` into a ``Failure``); ``finish`` runs once after the last file, unless
the run was interrupted. Problems a sink meets outside a file's result go to ``Outputs``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from porter.engine.changes import Change
from porter.engine.results import FileResult


@dataclass(frozen=True)
class Item:
    """One file of the run: ``path`` as discovered, ``relative`` below its input ``root``."""

    path: str
    relative: str
    root: str
    repo: str  # its git top folder, or its input's folder
    out: str | None = None  # the folder its input is mirrored to (``--out``)
    skipped: tuple[Change, ...] = ()  # changes of its port not applied (``--safe-only``, ``--interactive``)


@dataclass
class Outputs:
    """Where sinks say things (one line each) and record outputs they could not write."""

    say: Callable[[str], None]
    failed: list[str] = field(default_factory=list)
    stdout: list[str] = field(default_factory=list)  # text the command prints on standard output (``--report -``)

    def fail(self, output: str, line: str) -> None:
        self.failed.append(output)
        self.say(line)


def diff_label(path: str) -> str:
    """The name a diff shows for ``path``: '/'-separated, without a leading '/' (``a/abs/x.py``,
    not ``a//abs/x.py``)."""
    return path.replace(os.sep, "/").lstrip("/")


class Sink:
    def accept(self, item: Item, result: FileResult, diff: str) -> FileResult:
        return result

    def finish(self) -> None:
        return None


def write_output(path: str, data: bytes, outputs: Outputs) -> bool:
    """Write a run's own output file (a patch, a report) atomically; a failure is reported."""
    from porter.engine.textio import SourceError, write_atomic

    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        write_atomic(path, data)
    except (SourceError, OSError) as error:
        outputs.fail(path, f"{path}: error: cannot write: {error}")
        return False
    return True
