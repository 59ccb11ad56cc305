"""``--patch FILE``: every change as one patch, applicable with ``git apply`` and ``patch -p1``.

Paths in the patch are relative to a base folder chosen once per run (``patch_base``): the git
repository holding every input, else the inputs' common folder; ``git apply`` / ``patch -p1`` run
there. Each file's part keeps the file's own encoding (a latin-1 file's context still matches),
and a file name that is not UTF-8 keeps its bytes (git and patch take names as bytes).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from porter.engine.results import FileResult, Success
from porter.run.sinks import Item, Outputs, Sink, write_output


def patch_base(folders: Sequence[str], repos: Sequence[str | None]) -> str:
    """The folder patch paths are relative to: the one git repository holding every input, or
    else the inputs' common folder."""
    if repos and all(repo is not None for repo in repos) and len(set(repos)) == 1:
        return str(repos[0])
    return os.path.commonpath([os.path.abspath(folder) for folder in folders]) if folders else os.getcwd()


class Patch(Sink):
    def __init__(self, path: str, base: str, outputs: Outputs) -> None:
        self.path = path
        self.base = base
        self.outputs = outputs
        self.parts: list[bytes] = []

    def accept(self, item: Item, result: FileResult, diff: str) -> FileResult:
        parts = diff.split("\n", 2)  # "--- a/NAME", "+++ b/NAME", the hunks
        if isinstance(result, Success) and len(parts) == 3:
            label = os.path.relpath(os.path.abspath(item.path), self.base).replace(os.sep, "/")
            encoding = "utf-8" if result.encoding.lower().replace("_", "-") == "utf-8-sig" else result.encoding
            header = f"--- a/{label}\n+++ b/{label}\n".encode("utf-8", "surrogateescape")
            self.parts.append(header + parts[2].encode(encoding, "surrogateescape"))
        return result

    def finish(self) -> None:
        write_output(self.path, b"".join(self.parts), self.outputs)
