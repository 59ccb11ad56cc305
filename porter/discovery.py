"""Which files a run looks at. A root the user names is always included; walks skip
virtualenvs, caches, build outputs and hidden folders, and never follow symbolic links."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

PYTHON_SUFFIXES = (".py", ".pyi")
SKIPPED_DIRS = frozenset(
    {
        "__pycache__",
        "site-packages",
        "node_modules",
        "build",
        "dist",
        "venv",
        ".venv",
        "env",
        ".env",
        ".git",
        ".hg",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
    }
)


@dataclass(frozen=True)
class Target:
    """A file to port: ``path`` on disk, ``root`` the argument it came from, ``relative`` below it."""

    path: str
    root: str
    relative: str
    error: str | None = None  # set when the argument itself is unusable (missing, a link ...)


def _is_virtualenv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


def discover(paths: list[str], suffixes: tuple[str, ...] = PYTHON_SUFFIXES) -> Iterator[Target]:
    for raw in paths:
        root = os.path.normpath(raw)
        if os.path.islink(root):
            yield Target(root, root, os.path.basename(root), error="symbolic link; porter does not follow links")
        elif os.path.isdir(root):
            yield from _walk(root, suffixes)
        elif os.path.exists(root):
            yield Target(root, os.path.dirname(root) or ".", os.path.basename(root))
        else:
            yield Target(root, root, os.path.basename(root), error="no such file or directory")


def _walk(root: str, suffixes: tuple[str, ...]) -> Iterator[Target]:
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIPPED_DIRS
            and not d.startswith(".")
            and not d.endswith(".egg-info")
            and not os.path.islink(os.path.join(folder, d))
            and not _is_virtualenv(os.path.join(folder, d))
        )
        for name in sorted(files):
            if not name.endswith(suffixes):
                continue
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            if os.path.islink(path):
                yield Target(path, root, relative, error="symbolic link; porter does not follow or write through links")
            else:
                yield Target(path, root, relative)
