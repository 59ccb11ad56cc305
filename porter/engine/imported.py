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

import libcst as cst

from porter.engine.options import Options
from porter.engine.textio import SourceError, read_source

_PARSED: dict[tuple[str, str], cst.Module | None] = {}
_KEEP = 64  # trees kept per process (a bound on memory over a long batch)


def imported_module(options: Options, module: str) -> cst.Module | None:
    """The tree of ``module`` (``helpers``, ``.utils``, ``pkg.sub``, as the import spells it) when
    the runner listed it for this file and its bytes are still the ones it listed; else None."""
    for name, path, digest in options.imports:
        if name == module:
            return _parse(path, digest, options.max_file_size)
    return None


def _parse(path: str, digest: str, max_size: int) -> cst.Module | None:
    key = (path, digest)
    if key in _PARSED:
        return _PARSED[key]
    tree: cst.Module | None = None
    try:
        data = read_source(path, max_size)
        if hashlib.sha256(data).hexdigest() == digest:
            tree = cst.parse_module(data)
    except (SourceError, cst.ParserSyntaxError, UnicodeDecodeError, ValueError, RecursionError):
        tree = None  # unreadable, changed or not Python: the rule treats the callee as unknown
    if len(_PARSED) >= _KEEP:
        _PARSED.pop(next(iter(_PARSED)))
    _PARSED[key] = tree
    return tree
