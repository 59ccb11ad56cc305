"""Which of the project's own modules a file imports, for ``Options.imports``.

A script passes a CUDA device to a function of its helper module (``make_agent(cfg, "cuda:1")``
with ``make_agent`` in ``utils.py`` beside it); whether that argument is a device is only known by
reading the helper. The runner lists, per file, the modules it imports that are files here, with
the digest of their bytes; the engine parses one when a rule asks (``porter.engine.imported``), and
the digests are part of the file's cache key, so changing ``utils.py`` re-ports its importers.

Resolution, as Python finds a script's imports: an absolute import from the importing file's
folder (``import utils``, ``from pkg.sub import f``: ``pkg/sub.py`` or ``pkg/sub/__init__.py``
beside the file), a relative one from its package (``from .utils import f``, ``from .. import m``);
a name imported from a package may be a submodule (``from . import helpers``). Modules found only
through ``sys.path`` or an installed package are not listed (they are not the project's to port).

Listed only for a file that a rule reading imported modules could edit: one with a CUDA string
literal (``"cuda``/``'cuda``: NRN101 asks whether such an argument of an imported function is a
device), or one that says ``compile`` and calls a ``.step()`` (NRN416 asks whether an imported
function returns a torchrl ``HardUpdate``, or an optimizer whose step counts in a Python int, that a
compiled function steps; for such a file the modules its imported modules import are listed too), or
one that reads a device value (``.cpu()``/``.item()``), says ``log`` and steps (``.backward(``/``.step(``:
NRN612 asks whether an imported ``log_metrics(logger, ...)`` does nothing without a logger).
"""

from __future__ import annotations

import hashlib
import os
import re

from porter.engine.options import Options
from porter.engine.textio import SourceError, read_source

_QUOTED_CUDA = (b'"cuda', b"'cuda")  # two substring tests: a regex class ["'] has no literal prefix to skip by
_FROM = re.compile(rb"[ \t]*from[ \t]+(\.+[\w.]*|[\w.]+)[ \t]+import[ \t]*(\([^)]*\)|[^\n#;]*)")
_IMPORT = re.compile(rb"[ \t]*import[ \t]+([^\n#;]+)")
_LIMIT = 32  # modules listed per file at most (the first ones imported)


def with_local_imports(options: Options, path: str, data: bytes) -> Options:
    """``options`` with ``imports`` set to the project modules ``path`` (holding ``data``) imports."""
    quoted = b"cuda" in data and any(text in data for text in _QUOTED_CUDA)  # most files: one scan
    stepped = b".step()" in data and b"compile" in data
    logged = (b".cpu()" in data or b".item()" in data) and b"log" in data and (b".backward(" in data or b".step(" in data)
    # one level further only where NRN416 may ask (a helper's factory building a class of its own imports)
    found = local_imports(path, data, options.max_file_size, further=stepped) if quoted or stepped or logged else ()
    return options if found == options.imports else options.with_changes(imports=found)


def local_imports(path: str, data: bytes, max_size: int, further: bool = False) -> tuple[tuple[str, str, str], ...]:
    """(module as spelled in the file, its path, SHA-256 of its bytes) for each module ``data``
    imports that is a readable file of this project, in the order first imported. ``further``:
    then the ones those modules import, as they spell them (one level: a helper's factory returns
    an instance of a class its own module imports, ``make_optimizer`` in ``utils.py`` building
    ``Lamb`` of ``lamb.py``), unless the file itself spells that name for another module."""
    itself = os.path.abspath(path)
    listed: dict[str, tuple[str, str, str]] = {}
    _list(_spellings(data), os.path.dirname(itself), itself, listed, max_size)
    for _spelled, where, _sha in list(listed.values()) if further else ():
        _list(_spellings_of(where, max_size), os.path.dirname(where), itself, listed, max_size)
    return tuple(listed.values())


def _list(spellings: list[str], folder: str, itself: str, listed: dict[str, tuple[str, str, str]], max_size: int) -> None:
    for spelled in spellings:
        if spelled in listed or len(listed) >= _LIMIT:
            continue
        where = _resolve(spelled, folder)
        if where is None or where == itself:
            continue
        digest = _digest(where, max_size)
        if digest is not None:
            listed[spelled] = (spelled, where, digest)


_SPELLINGS: dict[str, tuple[tuple[int, int, int], list[str]]] = {}


def _spellings_of(path: str, max_size: int) -> list[str]:
    """The imports of a listed module (read once per batch and process while its file is unchanged)."""
    try:
        info = os.stat(path)
    except OSError:
        return []
    stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
    known = _SPELLINGS.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        found = _spellings(read_source(path, max_size))
    except SourceError:
        found = []
    _SPELLINGS[path] = (stamp, found)
    return found


# Per process: a helper package imported by every file of a folder is hashed once while its size,
# modification time and inode stay the same (the engine hashes the bytes it parses again).
_DIGESTS: dict[str, tuple[tuple[int, int, int], str]] = {}
_RESOLVED: dict[tuple[str, str], str | None] = {}
_LISTED: dict[str, dict[str, str]] = {}


def forget() -> None:
    """Drop what this process learnt of the file system (at the start of each batch: a long-lived
    process must see a module created since)."""
    _DIGESTS.clear()
    _RESOLVED.clear()
    _LISTED.clear()
    _SPELLINGS.clear()


def _digest(path: str, max_size: int) -> str | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
    known = _DIGESTS.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        digest = hashlib.sha256(read_source(path, max_size)).hexdigest()
    except SourceError:
        return None
    _DIGESTS[path] = (stamp, digest)
    return digest


def _spellings(data: bytes) -> list[str]:
    """Every module an import statement of ``data`` may name: ``from X import a`` gives ``X`` and
    ``X.a`` (a submodule, ``.a`` after bare dots); ``import a.b as c`` gives ``a.b``."""
    names: list[str] = []
    at = data.find(b"import")
    while at != -1:  # only the lines that say "import" (a regex over every line start costs more)
        start = data.rfind(b"\n", 0, at) + 1
        end = at + 6
        found = _FROM.match(data, start)
        if found is not None:
            module = found.group(1).decode("ascii", "replace")
            names.append(module)
            for item in found.group(2).decode("ascii", "replace").strip("()\\ \t\r\n").split(","):
                imported = item.strip(" \t\r\n\\()").split(" ")[0]
                if imported.isidentifier():
                    names.append(module + imported if module.endswith(".") else f"{module}.{imported}")
            end = found.end()
        elif (found := _IMPORT.match(data, start)) is not None:
            for item in found.group(1).decode("ascii", "replace").split(","):
                module = item.strip(" \t\r\\").split(" ")[0]
                if module and all(part.isidentifier() for part in module.split(".")):
                    names.append(module)
            end = found.end()
        at = data.find(b"import", max(end, at + 6))
    return [name for name in names if name]


def _resolve(spelled: str, folder: str) -> str | None:
    """The file ``spelled`` names from a file in ``folder``, if it is one here (asked once per run
    and process: the files of a folder import the same modules)."""
    key = (spelled, folder)
    if key not in _RESOLVED:
        _RESOLVED[key] = _find(spelled, folder)
    return _RESOLVED[key]


def _find(spelled: str, folder: str) -> str | None:
    dots = len(spelled) - len(spelled.lstrip("."))
    base = folder
    for _ in range(max(dots - 1, 0)):
        base = os.path.dirname(base)
    parts = [part for part in spelled[dots:].split(".") if part]
    for part in parts[:-1]:  # down through packages: each a folder here
        if _entries(base).get(part) != "dir":
            return None
        base = os.path.join(base, part)
    if not parts:
        return os.path.join(base, "__init__.py") if _entries(base).get("__init__.py") == "file" else None
    last = parts[-1]
    # a package before a module of the same name, as Python's path finder looks (FileFinder.find_spec)
    if _entries(base).get(last) == "dir" and _entries(os.path.join(base, last)).get("__init__.py") == "file":
        return os.path.join(base, last, "__init__.py")
    if _entries(base).get(last + ".py") == "file":
        return os.path.join(base, last + ".py")
    return None


def _entries(folder: str) -> dict[str, str]:
    """A folder's entries as "file" / "dir" (a symbolic link is neither: never followed), read
    once per batch and process (the files of a tree import from the same few folders)."""
    found = _LISTED.get(folder)
    if found is None:
        found = {}
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        continue
                    if entry.is_file(follow_symlinks=False):
                        found[entry.name] = "file"
                    elif entry.is_dir(follow_symlinks=False):
                        found[entry.name] = "dir"
        except OSError:
            pass
        _LISTED[folder] = found
    return found
