"""A content cache: a re-run skips files whose result is already known.

Key: SHA-256 of the file's bytes, the kind of file (Python or notebook), porter's version, the
effective options (``Options.cache_key()``) and a fingerprint of the code that decides a port —
porter's own modules, every built-in rule module and the installed rule plugins — so editing a
rule, upgrading porter or changing a flag never serves a stale result.

Stored: ``Unchanged`` (known clean, with why no parse was needed), ``Success`` (the new bytes
and the Changes, without the path: identical files share an entry) and parse failures (a
syntax error stays one). Read/write/internal failures are not stored: they depend on the
machine, not on the bytes.

Never trusted more than the source: each row carries the SHA-256 of the input it was computed
from, of its output, and of the whole row (key, metadata, output). A row is used only when all
three match and its output decodes in its encoding (a notebook's still loads as JSON); any
doubt drops the row and the file is ported afresh (one warning per run). A Python output is not
parsed again: the port parsed it before handing it back (``core._parses``), and the key names
the code and the Python and libcst versions that did, so matching digests mean these are bytes
that parsed here (re-parsing 154 cached outputs was 2.6-3.0 s of a 3.5 s warm run, issue 14.1). A database SQLite cannot open or read is deleted and started anew.

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
import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from porter import __version__
from porter.engine.changes import Change, ImportSpec, Kind, Safety
from porter.engine.markers import FileMarkers, Marker
from porter.engine.results import Failure, FileResult, Finding, FindingKind, Success, Unchanged

SCHEMA = 2  # 2: rows carry input, output and row digests
DB_NAME = f"results-v{SCHEMA}.sqlite"
Row = tuple[str, str, bytes | None, str]  # key, meta (JSON), new bytes, row digest


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
    # The parsers that checked a stored output (decode does not parse it again).
    digest.update(f"python {sys.version}; libcst {_version('libcst')}".encode())
    return digest.hexdigest()


def _version(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "?"


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


def content_digest(data: bytes) -> str:
    """SHA-256 of a file's bytes: computed once per file, the key is derived from it."""
    return hashlib.sha256(data).hexdigest()


def file_key(input_digest: str, options_key: str, kind: str) -> str:
    """The cache key of one file's bytes (given by their ``content_digest``) under one configuration."""
    digest = hashlib.sha256()
    digest.update(code_fingerprint().encode())
    digest.update(b"\0" + kind.encode() + b"\0" + options_key.encode() + b"\0")
    digest.update(input_digest.encode())
    return digest.hexdigest()


def row_digest(key: str, meta: str, new: bytes | None) -> str:
    digest = hashlib.sha256(key.encode() + b"\0" + meta.encode() + b"\0")
    digest.update(b"-" if new is None else b"+" + new)
    return digest.hexdigest()


class Cache:
    """Get and put results by key. Writes are batched and committed by ``flush``/``close``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.warning: str | None = None
        self.path = os.path.join(folder, DB_NAME)
        self._pending: list[Row] = []
        self._dropped: set[str] = set()  # keys of rows that failed a check: deleted at flush
        self._db: sqlite3.Connection | None = None
        try:
            os.makedirs(folder, exist_ok=True)
            _ignore_in_git(folder)
        except OSError as error:
            self._disable(f"cache disabled ({folder}: {error})")
            return
        try:
            self._db = _open(self.path)
        except sqlite3.Error as error:
            if not _damaged(error):  # locked, unwritable ...: leave it alone
                self._disable(f"cache disabled ({folder}: {error})")
                return
            self._discard(f"cache discarded and started anew ({self.path}: {error})")
            try:
                self._db = _open(self.path)
            except sqlite3.Error as again:
                self._disable(f"cache disabled ({self.path}: {again})")

    def _disable(self, why: str) -> None:
        self.warning = self.warning or why
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
        self._db = None
        self._pending.clear()

    def _discard(self, why: str) -> None:
        """A database SQLite cannot read: close and delete it (a cache holds nothing else)."""
        self._disable(why)
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(self.path + suffix)
            except OSError:
                pass

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def is_empty(self) -> bool:
        """Whether the cache holds no row at all (a first run): nothing to look up, so the batch
        need not read and hash every file before its workers do it again."""
        if self._db is None:
            return True
        if self._pending:
            return False
        try:
            return self._db.execute("SELECT 1 FROM results LIMIT 1").fetchone() is None
        except sqlite3.Error:
            return False  # let the look-up meet the error and handle it

    def get_many(self, keys: Sequence[str]) -> dict[str, Row]:
        """Stored rows for the keys that have one (one query per 500 keys). Rows are not yet
        checked: ``decode`` checks each against the file it is for."""
        if self._db is None or not keys:
            return {}
        found: dict[str, Row] = {}
        unique = sorted(set(keys))
        try:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT key, meta, new, digest FROM results WHERE key IN ({marks})"
                for key, meta, new, digest in self._db.execute(query, chunk):
                    found[key] = (key, meta, new, digest)
        except sqlite3.Error as error:
            if _damaged(error):
                self._discard(f"cache discarded (cannot read: {error}); files are ported afresh")
            else:
                self._disable(f"cache disabled (cannot read: {error})")
            return {}
        return found

    def drop(self, key: str) -> None:
        """Forget a row that failed a check (deleted at the next flush), with one warning per run."""
        self._dropped.add(key)
        self.warning = self.warning or "cache: damaged entries dropped; those files were ported afresh"

    def put(self, key: str, result: FileResult, input_digest: str) -> None:
        row = encode(key, result, input_digest)
        if row is not None and self._db is not None:
            self._dropped.discard(key)
            self._pending.append(row)
            if len(self._pending) >= 500:
                self.flush()

    def flush(self) -> None:
        if self._db is None or not (self._pending or self._dropped):
            self._pending.clear()
            return
        try:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM results WHERE key = ?", [(key,) for key in sorted(self._dropped)])
            self._db.executemany("INSERT OR REPLACE INTO results (key, meta, new, digest) VALUES (?, ?, ?, ?)", self._pending)
            self._db.execute("COMMIT")
        except sqlite3.Error as error:
            if _damaged(error):
                self._discard(f"cache discarded (cannot write: {error})")
            else:
                self._disable(f"cache not written ({error})")
        self._pending.clear()
        self._dropped.clear()

    def close(self) -> None:
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None


def _damaged(error: sqlite3.Error) -> bool:
    """A database SQLite cannot make sense of (not a database, malformed), as opposed to one it
    cannot use now (locked, unwritable: ``OperationalError``), which is left alone."""
    return isinstance(error, sqlite3.DatabaseError) and not isinstance(error, sqlite3.OperationalError)


def _open(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, meta TEXT NOT NULL, new BLOB, digest TEXT NOT NULL)")
        db.execute("SELECT count(*) FROM results WHERE key = ''").fetchone()  # reads the schema and the index root
    except sqlite3.Error:
        db.close()
        raise
    return db


def _ignore_in_git(folder: str) -> None:
    # The cache never shows up as an untracked file, whatever the project's .gitignore says.
    marker = os.path.join(folder, ".gitignore")
    if not os.path.exists(marker):
        with open(marker, "w", encoding="utf-8") as handle:
            handle.write("# created by porter\n*\n")


def encode(key: str, result: FileResult, input_digest: str) -> Row | None:
    """A row for ``result`` (ported from bytes whose ``content_digest`` is ``input_digest``),
    or None when it must not be cached."""
    meta: dict[str, object]
    new: bytes | None = None
    if isinstance(result, Unchanged):
        meta = {"s": "u", "skip": result.skipped}
    elif isinstance(result, Failure):
        if result.kind != "parse":
            return None
        meta = {"s": "f", "reason": result.reason, "kind": result.kind}
    elif isinstance(result, Success):
        changes = [
            [c.code, c.message, c.line, c.column, c.safety.value, c.kind.value, [[i.module, i.obj, i.asname] for i in c.imports]]
            for c in result.changes
        ]
        new = result.new
        meta = {"s": "c", "enc": result.encoding, "changes": changes, "out": content_digest(new)}
    else:
        return None
    meta["in"] = input_digest
    findings = getattr(result, "findings", ())
    if findings:  # the verifier's findings travel with the result they were made for
        meta["findings"] = [[f.kind.value, f.line, f.message, f.code] for f in findings]
    marks = getattr(result, "marks", None)
    if marks is not None:  # and the markers counted in its output (a warm run tokenizes nothing)
        meta["mk"] = [marks.added, [[m.line, m.code, m.message] for m in marks.earlier]]
    text = json.dumps(meta)
    return key, text, new, row_digest(key, text, new)


def decode(row: Row, path: str, old: bytes, input_digest: str, kind: str, reparse: bool = True) -> FileResult | None:
    """The result ``row`` stands for, for the file at ``path`` holding ``old`` (of
    ``content_digest`` ``input_digest``; ``kind`` as in the key), or None when the row fails a
    check: damaged, for other bytes, or (``reparse``: the run writes it) an output that does not
    decode (a notebook that does not load). Never raises."""
    key, text, new, digest = row
    try:
        if row_digest(key, text, new) != digest:
            return None
        meta = json.loads(text)
        if meta["in"] != input_digest:
            return None
        status = meta["s"]
        findings = tuple(
            Finding(FindingKind(kind_), path, line, message, code) for kind_, line, message, code in meta.get("findings", ())
        )
        marks = None
        if "mk" in meta:
            added, earlier = meta["mk"]
            marks = FileMarkers(int(added), tuple(Marker(int(line), str(code), str(message)) for line, code, message in earlier))
        if status == "u":
            return Unchanged(path, skipped=meta.get("skip"), findings=findings, marks=marks)
        if status == "f":
            return Failure(path, meta["reason"], kind=meta["kind"])
        if status != "c" or new is None or new == old or content_digest(new) != meta["out"]:
            return None
        _check_output(new, meta["enc"], kind if reparse else "")
        changes = tuple(
            Change(code, message, path, line, column, Safety(safety), Kind(change_kind), tuple(ImportSpec(*spec) for spec in imports))
            for code, message, line, column, safety, change_kind, imports in meta["changes"]
        )
        return Success(path, old=old, new=new, encoding=meta["enc"], changes=changes, findings=findings, marks=marks)
    except Exception:  # any doubt: not used, ported afresh
        return None


def _check_output(new: bytes, encoding: str, kind: str) -> None:
    """Raise unless ``new`` is text in the file's encoding and, for a notebook, loads. (Python
    that parses: its digest says so, see the module's docstring.)"""
    text = new.decode(encoding)
    if kind == "ipynb":
        json.loads(text)


def with_path(result: FileResult, path: str) -> FileResult:
    """``result`` reported for ``path`` (cached entries are shared by identical files)."""
    if result.path == path:
        return result
    if isinstance(result, Success):
        return replace(result, path=path, changes=tuple(replace(change, path=path) for change in result.changes))
    return replace(result, path=path)

