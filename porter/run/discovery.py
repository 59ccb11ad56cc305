"""Which files a run looks at. A root the user names is always included; walks skip
virtualenvs, caches, build outputs and hidden folders, and never follow symbolic links.

Inside a git work tree the listing is git's own (``git ls-files -co --exclude-standard``: tracked
plus untracked-but-not-ignored files), so ``.gitignore`` is honoured; outside one, or when git is
missing, the folder is walked. Either way ``exclude`` globs (``--exclude``, ``[tool.porter]
exclude``) and the skipped folders apply below a root, never to the root itself.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from porter.engine.textio import is_porter_temp

PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIXES = (".ipynb",)
PORTED_SUFFIXES = PYTHON_SUFFIXES + NOTEBOOK_SUFFIXES
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
        ".porter_cache",
        ".eggs",
    }
)
# Folders never copied by --out either: version control and caches, not part of a runnable tree.
NEVER_COPIED_DIRS = frozenset({".git", ".hg", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".porter_cache"})
GENERATED_MARK = b"@generated"
GENERATED_WINDOW = 4096  # the mark counts only in the file's head, where code generators put it


@dataclass(frozen=True)
class Target:
    """A file to port: ``path`` on disk, ``root`` the argument it came from, ``relative`` below it.

    ``explicit``: the user named this very file, so no exclusion (``@generated``, globs) applies.
    """

    path: str
    root: str
    relative: str
    error: str | None = None  # set when the argument itself is unusable (missing, a link ...)
    explicit: bool = False

    @property
    def is_notebook(self) -> bool:
        return self.path.endswith(NOTEBOOK_SUFFIXES)

    @property
    def kind(self) -> str:
        """``py``, ``ipynb``, or ``file`` (a non-Python file: requirements, launchers, configs)."""
        if self.path.endswith(PYTHON_SUFFIXES):
            return "py"
        return "ipynb" if self.is_notebook else "file"


def _is_virtualenv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


def discover(
    paths: list[str],
    suffixes: tuple[str, ...] = PYTHON_SUFFIXES,
    exclude: Sequence[str] = (),
    use_git: bool = False,
    accept: Callable[[str], bool] | None = None,
) -> Iterator[Target]:
    """The files below ``paths`` that end with one of ``suffixes``, in a stable order.

    ``use_git`` lists folders inside a git work tree through git (honours ``.gitignore``);
    ``exclude`` globs are matched against the path relative to the root and against each name;
    ``accept(path)`` admits further files (the non-Python kinds porter ports).
    """
    for raw in paths:
        root = os.path.normpath(raw)
        if os.path.islink(root):
            yield Target(root, root, os.path.basename(root), error="symbolic link; porter does not follow links", explicit=True)
        elif os.path.isdir(root):
            listed = git_files(root) if use_git else None
            if listed is None:
                yield from _walk(root, suffixes, exclude, accept)
            else:
                yield from _from_listing(root, listed, suffixes, exclude, accept)
        elif os.path.exists(root):
            yield Target(root, os.path.dirname(root) or ".", os.path.basename(root), explicit=True)
        else:
            yield Target(root, root, os.path.basename(root), error="no such file or directory", explicit=True)


def is_excluded(relative: str, patterns: Sequence[str]) -> bool:
    """Whether ``relative`` (a path below a root, any separator) matches one of the globs.

    A pattern matches the whole relative path (``*`` crosses folders: ``tests/*``), any leading
    folder of it (``tests`` excludes everything below ``tests/``), or the file name (``*_pb2.py``).
    """
    if not patterns:
        return False
    posix = relative.replace(os.sep, "/").strip("/")
    parts = posix.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        wanted = pattern.replace(os.sep, "/").strip("/")
        if wanted.startswith("./"):
            wanted = wanted[2:]
        if any(fnmatch.fnmatchcase(prefix, wanted) for prefix in prefixes):
            return True
        if "/" not in wanted and any(fnmatch.fnmatchcase(part, wanted) for part in parts):
            return True
    return False


def is_generated(data: bytes) -> bool:
    """Whether the file says it is generated (``@generated`` in its head): regenerate, don't port."""
    return GENERATED_MARK in data[:GENERATED_WINDOW]


def _skipped_dir(folder: str, name: str) -> bool:
    return (
        name in SKIPPED_DIRS
        or name.startswith(".")
        or name.endswith(".egg-info")
        or os.path.islink(os.path.join(folder, name))
        or _is_virtualenv(os.path.join(folder, name))
    )


def _wanted(path: str, suffixes: tuple[str, ...], accept: Callable[[str], bool] | None) -> bool:
    if is_porter_temp(os.path.basename(path)):  # an interrupted porter's leftover: never a target
        return False
    return path.endswith(suffixes) or (accept is not None and accept(path))


def _joined(folder: str, name: str) -> str:
    """``folder/name`` as a person writes it: ``sub/train.py``, not ``./sub/train.py``."""
    return os.path.normpath(os.path.join(folder, name))


def _walk(
    root: str, suffixes: tuple[str, ...], exclude: Sequence[str], accept: Callable[[str], bool] | None = None
) -> Iterator[Target]:
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(
            d
            for d in dirs
            if not _skipped_dir(folder, d) and not is_excluded(os.path.relpath(os.path.join(folder, d), root), exclude)
        )
        for name in sorted(files):
            path = _joined(folder, name)
            if not _wanted(path, suffixes, accept):
                continue
            relative = os.path.relpath(path, root)
            if is_excluded(relative, exclude):
                continue
            if os.path.islink(path):
                yield Target(path, root, relative, error="symbolic link; porter does not follow or write through links")
            else:
                yield Target(path, root, relative)


def git_files(root: str) -> list[str] | None:
    """Files below ``root`` as git sees them (tracked + untracked-not-ignored), relative to ``root``.

    None when ``root`` is not inside a git work tree, when git ignores ``root`` itself (a folder
    the user names is never excluded: it is walked instead), or when git is not installed.
    """
    try:
        ignored = subprocess.run(
            ["git", "-C", root, "check-ignore", "-q", "--", os.path.abspath(root)], capture_output=True, check=False
        )
    except OSError:
        return None
    if ignored.returncode == 0:
        return None
    try:
        done = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    names = {os.path.normpath(name) for name in done.stdout.decode("utf-8", "surrogateescape").split("\0") if name}
    return sorted(names)


def _from_listing(
    root: str,
    listed: Iterable[str],
    suffixes: tuple[str, ...],
    exclude: Sequence[str],
    accept: Callable[[str], bool] | None = None,
) -> Iterator[Target]:
    rejected: dict[str, bool] = {}  # folder (relative) -> skipped; cached, since many files share one
    for relative in listed:
        if not _wanted(os.path.join(root, relative), suffixes, accept) or is_excluded(relative, exclude):
            continue
        if _in_skipped_folder(root, relative, rejected):
            continue
        path = _joined(root, relative)
        if os.path.islink(path):
            yield Target(path, root, relative, error="symbolic link; porter does not follow or write through links")
        elif os.path.isfile(path):  # a tracked file deleted from the work tree is not there to port
            yield Target(path, root, relative)


def _in_skipped_folder(root: str, relative: str, rejected: dict[str, bool]) -> bool:
    folder = os.path.dirname(relative)
    if not folder:
        return False
    if folder not in rejected:
        parent, name = os.path.split(folder)
        rejected[folder] = _in_skipped_folder(root, folder, rejected) or _skipped_dir(os.path.join(root, parent), name)
    return rejected[folder]


def tree_files(root: str, use_git: bool = True) -> list[str]:
    """Every file of the tree under ``root`` (relative paths) for a complete copy (``--out``).

    Git's listing inside a work tree; otherwise a walk that leaves out version control, caches
    and virtualenvs. Symbolic links (to files or folders) are listed, not followed: the copy
    reproduces them as links. Porter's own temporary files are never listed. Exclusions do not
    apply: an excluded file is copied unported.
    """
    listed = git_files(root) if use_git else None
    if listed is not None:
        return [
            name
            for name in listed
            if not is_porter_temp(os.path.basename(name))
            and (os.path.islink(os.path.join(root, name)) or os.path.isfile(os.path.join(root, name)))
        ]
    found: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in NEVER_COPIED_DIRS and d not in links and not _is_virtualenv(os.path.join(folder, d))
        )
        for name in sorted([*files, *links]):
            if not is_porter_temp(name):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return found


def git_toplevel(path: str) -> str | None:
    """The top folder of the git work tree holding ``path``, or None."""
    folder = path if os.path.isdir(path) else (os.path.dirname(path) or ".")
    try:
        done = subprocess.run(["git", "-C", folder, "rev-parse", "--show-toplevel"], capture_output=True, check=False)
    except OSError:
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "surrogateescape").strip() or None
