"""The project's own modules a file imports, parsed on a rule's request.

The runner lists them in ``Options.imports`` (module as the file spells it, path, SHA-256 of the
bytes it saw); a rule asks for one by that spelling and gets its libcst tree, or None. The bytes
are read again here and used only if they hash to the listed digest (the file changed since: None,
as for a module that does not parse), so a port never depends on bytes its cache key does not
name. Rules never open files themselves. Trees are kept per (path, digest) for the process: a
helper module imported by every script of a folder is parsed once per worker.
"""

from __future__ import annotations

import hashlib
import re

import libcst as cst

from porter.engine.options import Options
from porter.engine.textio import SourceError, read_source

_PARSED: dict[tuple[str, str], cst.Module | None] = {}
_KEEP = 64  # trees kept per process (a bound on memory over a long batch)


def imported_module(options: Options, module: str, defining: str | None = None) -> cst.Module | None:
    """The tree of ``module`` (``helpers``, ``.utils``, ``pkg.sub``, as the import spells it) when
    the runner listed it for this file and its bytes are still the ones it listed; else None.
    ``defining``: a name the caller needs; a module whose text has no line ``def NAME``/``async
    def NAME``/``class NAME`` at the top level is not parsed (None: a large package ``__init__``
    that only re-exports costs no parse). A tree parsed for an earlier request is returned as it is."""
    for name, path, digest in options.imports:
        if name != module:
            continue
        key = (path, digest)
        if key in _PARSED:
            return _PARSED[key]  # its digest was checked when it was parsed
        data = _read(path, digest, options.max_file_size)
        if data is None or (defining is not None and not _defines(data, defining)):
            return None
        return _parse(key, data)
    return None


def forget() -> None:
    """Drop the trees kept (the benchmark times each file as if it were the first to ask)."""
    _PARSED.clear()


def _read(path: str, digest: str, max_size: int) -> bytes | None:
    try:
        data = read_source(path, max_size)
    except SourceError:
        return None
    return data if hashlib.sha256(data).hexdigest() == digest else None  # changed since it was listed


def _defines(data: bytes, name: str) -> bool:
    return re.search(rb"^(?:async[ \t]+def|def|class)[ \t]+" + re.escape(name.encode()) + rb"\b", data, re.MULTILINE) is not None


def _parse(key: tuple[str, str], data: bytes) -> cst.Module | None:
    try:
        tree: cst.Module | None = cst.parse_module(data)
    except (cst.ParserSyntaxError, UnicodeDecodeError, ValueError, RecursionError):
        tree = None  # not Python this parser reads: the rule treats the callee as unknown
    if len(_PARSED) >= _KEEP:
        _PARSED.pop(next(iter(_PARSED)))
    _PARSED[key] = tree
    return tree
