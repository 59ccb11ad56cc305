"""A content cache: a re-run skips files whose result is already known.

Key: SHA-256 of the file's bytes, the kind of file (Python or notebook), porter's version, the
effective options (``Options.cache_key()``) and a fingerprint of the code that decides a port —
porter's own modules, every built-in rule module and the installed rule plugins — so editing a
rule, upgrading porter or changing a flag never serves a stale result.

Stored: ``Unchanged`` (known clean, with why no parse was needed), ``Success`` (the new bytes
and the Changes, without the path: identical files share an entry) and parse failures (a
syntax error stays one). Read/write/internal failures are not stored: they depend on the
machine, not on the bytes.

One SQLite file under the cache folder (default ``.porter_cache`` beside the pyproject.toml in
use, else in the working directory; ``PORTER_CACHE_DIR`` or ``cache-dir`` move it). The cache is
best-effort: a locked, corrupt or unwritable cache is ignored with one warning, never an error.
This module imports neither libcst nor the engine, so a fully cached run needs neither.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from porter import __version__
from porter.engine.changes import Change, ImportSpec, Kind, Safety
from porter.engine.results import Failure, FileResult, Success, Unchanged

SCHEMA = 1
DB_NAME = f"results-v{SCHEMA}.sqlite"


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Hash of the source that decides a port: porter's modules, the rules and rule plugins."""
    import importlib.util

    digest = hashlib.sha256(__version__.encode())
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # porter/
    folders: list[str] = [package]
    spec = importlib.util.find_spec("porter.rules")
    if spec is not None and spec.submodule_search_locations:
        folders.extend(location for location in spec.submodule_search_locations if not _inside(location, package))
    for folder in folders:
        # Every module of every subpackage: editing any of them must never serve a stale port.
        for current, subfolders, names in sorted(os.walk(folder)):
            subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(current, name)
                    digest.update(os.path.relpath(path, folder).encode())
                    with open(path, "rb") as handle:
                        digest.update(handle.read())
    for plugin in _plugins():
        digest.update(plugin.encode())
    return digest.hexdigest()


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return path == folder or path.startswith(folder + os.sep)


def _plugins() -> list[str]:
    # Third-party rule modules: name, target and distribution version (their code is not read).
    from importlib import metadata

    found = []
    for entry in metadata.entry_points(group="porter.rules"):
        dist = getattr(entry, "dist", None)
        version = f"{dist.name}=={dist.version}" if dist is not None else "?"
        found.append(f"{entry.name}={entry.value}@{version}")
    return sorted(found)


def file_key(data: bytes, options_key: str, kind: str) -> str:
    """The cache key of one file's bytes under one configuration."""
    digest = hashlib.sha256()
    digest.update(code_fingerprint().encode())
    digest.update(b"\0" + kind.encode() + b"\0" + options_key.encode() + b"\0")
    digest.update(data)
    return digest.hexdigest()


class Cache:
    """Get and put results by key. Writes are batched and committed by ``flush``/``close``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.warning: str | None = None
        self._pending: list[tuple[str, str, bytes | None]] = []
        self._db: sqlite3.Connection | None = None
        try:
            os.makedirs(folder, exist_ok=True)
            _ignore_in_git(folder)
            self._db = sqlite3.connect(os.path.join(folder, DB_NAME), timeout=5.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, meta TEXT NOT NULL, new BLOB)")
        except (OSError, sqlite3.Error) as error:
            self._disable(f"cache disabled ({folder}: {error})")

    def _disable(self, why: str) -> None:
        self.warning = self.warning or why
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
        self._db = None

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def get_many(self, keys: Sequence[str]) -> dict[str, tuple[str, bytes | None]]:
        """Stored rows for the keys that have one (one query per 500 keys)."""
        if self._db is None or not keys:
            return {}
        found: dict[str, tuple[str, bytes | None]] = {}
        unique = sorted(set(keys))
        try:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, meta, new in self._db.execute(f"SELECT key, meta, new FROM results WHERE key IN ({marks})", chunk):
                    found[key] = (meta, new)
        except sqlite3.Error as error:
            self._disable(f"cache disabled (cannot read: {error})")
            return {}
        return found

    def put(self, key: str, result: FileResult) -> None:
        row = encode(result)
        if row is not None and self._db is not None:
            self._pending.append((key, *row))
            if len(self._pending) >= 500:
                self.flush()

    def flush(self) -> None:
        if self._db is None or not self._pending:
            self._pending.clear()
            return
        try:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO results (key, meta, new) VALUES (?, ?, ?)", self._pending)
            self._db.execute("COMMIT")
        except sqlite3.Error as error:
            self._disable(f"cache not written ({error})")
        self._pending.clear()

    def close(self) -> None:
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None


def _ignore_in_git(folder: str) -> None:
    # The cache never shows up as an untracked file, whatever the project's .gitignore says.
    marker = os.path.join(folder, ".gitignore")
    if not os.path.exists(marker):
        with open(marker, "w", encoding="utf-8") as handle:
            handle.write("# created by porter\n*\n")


def encode(result: FileResult) -> tuple[str, bytes | None] | None:
    """A row for ``result``, or None when it must not be cached."""
    if isinstance(result, Unchanged):
        return json.dumps({"s": "u", "skip": result.skipped}), None
    if isinstance(result, Failure):
        if result.kind != "parse":
            return None
        return json.dumps({"s": "f", "reason": result.reason, "kind": result.kind}), None
    if isinstance(result, Success):
        changes = [
            [c.code, c.message, c.line, c.column, c.safety.value, c.kind.value, [[i.module, i.obj, i.asname] for i in c.imports]]
            for c in result.changes
        ]
        return json.dumps({"s": "c", "enc": result.encoding, "changes": changes}), result.new
    return None


def decode(row: tuple[str, bytes | None], path: str, old: bytes) -> FileResult:
    """The result a row stands for, for the file at ``path`` holding ``old``."""
    meta = json.loads(row[0])
    status = meta["s"]
    if status == "u":
        return Unchanged(path, skipped=meta.get("skip"))
    if status == "f":
        return Failure(path, meta["reason"], kind=meta["kind"])
    changes = tuple(
        Change(code, message, path, line, column, Safety(safety), Kind(kind), tuple(ImportSpec(*spec) for spec in imports))
        for code, message, line, column, safety, kind, imports in meta["changes"]
    )
    return Success(path, old=old, new=row[1] or b"", encoding=meta["enc"], changes=changes)


def with_path(result: FileResult, path: str) -> FileResult:
    """``result`` reported for ``path`` (cached entries are shared by identical files)."""
    if result.path == path:
        return result
    if isinstance(result, Success):
        return replace(result, path=path, changes=tuple(replace(change, path=path) for change in result.changes))
    return replace(result, path=path)

