"""Reading source files safely and writing them atomically.

Reading: bytes in, a decision out — binary, too large, undecodable and unreadable files are
reported, never guessed at. Writing: a temporary file in the same folder, flushed and synced,
then renamed over the original, so a file is always either fully old or fully new; a file that
changed after it was read is not overwritten. Ctrl-C and SIGTERM are held back (in the main
thread) from the temporary file's creation to its rename or removal, so an interrupt never leaves
one behind; temporary files an earlier, killed porter left (``.NAME.XXXXXXXX.porter-tmp``) are
removed the first time this process writes in their folder, under the folder's lock.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import stat
import tempfile
import threading
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from porter.engine.options import Options
    from porter.engine.results import FileResult

try:  # POSIX; elsewhere writes go unlocked (the re-read check still applies)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


TEMP_SUFFIX = ".porter-tmp"
_TEMP_NAME = re.compile(r"\..+\.[A-Za-z0-9_]{8}\.porter-tmp\Z", re.DOTALL)  # tempfile.mkstemp's 8 random characters
_cleaned: set[str] = set()  # folders whose stale temporary files this process removed


class SourceError(Exception):
    """A file porter refuses to port; the message is one line naming the reason."""


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str


def check_bytes(data: bytes, max_size: int) -> None:
    if len(data) > max_size:
        raise SourceError(f"file is {len(data):,} bytes, over the {max_size:,}-byte limit (--max-file-size)")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise SourceError(f"binary file (a NUL byte at line {line}, byte {nul}), not Python source")


def decode_source(data: bytes) -> Decoded:
    """Decode as Python does: a BOM or a PEP 263 coding cookie, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "invalid or missing encoding declaration" in str(error.msg):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as bad:
                raise SourceError(
                    f"not valid utf-8 at byte {bad.start} and has no coding cookie; "
                    "add a '# -*- coding: ... -*-' line or re-encode"
                ) from None
        raise SourceError(f"bad encoding declaration: {error.msg}") from None
    try:
        return Decoded(data.decode(encoding), encoding)
    except UnicodeDecodeError as error:
        hint = "" if encoding not in ("utf-8", "utf-8-sig") else " and has no coding cookie"
        raise SourceError(
            f"not valid {encoding} at byte {error.start}{hint}; add a '# -*- coding: ... -*-' line or re-encode"
        ) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in the coding cookie") from None


def port_from_disk(path: str, options: Options | None, display_path: str | None, port: Callable[[bytes, str, Options], FileResult]) -> FileResult:
    """Read ``path`` and give its bytes to ``port`` (``data, shown path, options``). Never raises for
    a bad file: a file that cannot be read is a ``Failure`` under its shown path."""
    from porter.engine.options import Options
    from porter.engine.results import Failure

    options = options or Options()
    shown = display_path or path
    try:
        data = read_source(path, options.max_file_size)
    except SourceError as error:
        return Failure(shown, str(error), kind="read")
    return port(data, shown, options)


def read_source(path: str, max_size: int) -> bytes:
    """Read a regular file's bytes (refusing links and special files)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise SourceError("no such file") from None
    except OSError as error:
        raise SourceError(f"cannot stat: {error.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise SourceError("symbolic link; porter does not follow or write through links")
    if not stat.S_ISREG(info.st_mode):
        raise SourceError("not a regular file")
    if info.st_size > max_size:
        raise SourceError(f"file is {info.st_size:,} bytes, over the {max_size:,}-byte limit (--max-file-size)")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except PermissionError:
        raise SourceError("permission denied (unreadable)") from None
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror}") from None


def is_porter_temp(name: str) -> bool:
    """Whether a file name is one of porter's temporary files (never ported, copied or kept)."""
    return bool(_TEMP_NAME.match(name))


def write_atomic(path: str, data: bytes, expected: bytes | None = None, mode: int | None = None, replace_link: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically.

    ``expected``: the bytes the port was computed from; when the file no longer holds them it
    changed under us and is left alone. Permission bits are kept (``mode`` sets them instead).
    ``replace_link``: a symbolic link at ``path`` is replaced by the file (its target is never
    touched); otherwise a link is refused. Raises ``SourceError``.
    """
    directory = os.path.dirname(os.path.abspath(path))
    with directory_lock(directory):
        _write_locked(path, directory, data, expected, mode, replace_link)


def remove_stale_temps(directory: str) -> None:
    """Remove porter's temporary files in ``directory`` (once per process; call with its lock
    held: no porter is then between creating one and renaming it)."""
    if directory in _cleaned:
        return
    _cleaned.add(directory)
    try:
        names = [name for name in os.listdir(directory) if name.endswith(TEMP_SUFFIX) and is_porter_temp(name)]
    except OSError:
        return
    for name in names:
        _unlink_quietly(os.path.join(directory, name))


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back until the block is done, then deliver them (main thread only;
    elsewhere signals are not handled in Python anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(number) is not None:  # None: a handler set outside Python, left alone
            previous[number] = signal.signal(number, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for signum in dict.fromkeys(caught):
            handler = previous[signal.Signals(signum)]
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)


def temp_beside(path: str) -> tuple[int, str]:
    """A new temporary file in ``path``'s folder, named so porter recognises it (call inside
    ``deferred_signals``: the caller must remove or rename it)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        return tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=TEMP_SUFFIX, dir=directory)
    except OSError as error:
        raise SourceError(f"cannot create a temporary file beside it: {error.strerror}") from None


@contextlib.contextmanager
def directory_lock(directory: str) -> Iterator[None]:
    """Serialise check-and-replace between porter processes writing the same folder.

    ``flock`` on the folder itself: nothing is created in the user's tree, and the lock goes
    away with the process. Where the folder cannot be opened or locked, writing goes on unlocked
    (the re-read check below still refuses a file that changed).
    """
    try:
        if fcntl is None:
            raise OSError("no flock here")
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            remove_stale_temps(directory)
        except OSError:
            pass
        yield
    finally:
        os.close(handle)  # closing releases the lock


_directory_lock = directory_lock  # the former name


def _write_locked(path: str, directory: str, data: bytes, expected: bytes | None, mode: int | None, replace_link: bool) -> None:
    kept: int | None = None
    if os.path.lexists(path):
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            if not replace_link:
                raise SourceError("symbolic link; porter does not write through links")
        elif not info.st_mode & stat.S_IWUSR and mode is None:
            raise SourceError("read-only file; not written (make it writable or use --out)")
        else:
            kept = stat.S_IMODE(info.st_mode)
        if expected is not None:
            try:
                with open(path, "rb") as handle:
                    current = handle.read()
            except OSError as error:
                raise SourceError(f"cannot re-read before writing: {error.strerror}") from None
            if current != expected:
                raise SourceError("file changed after it was read; not overwritten (run porter again)")
    elif expected is not None:
        raise SourceError("file was deleted after it was read; not recreated")
    final_mode = mode if mode is not None else kept if kept is not None else 0o644
    with deferred_signals():
        handle_fd, temp_path = temp_beside(path)
        try:
            with os.fdopen(handle_fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp_path, final_mode)
            os.replace(temp_path, path)
        except OSError as error:
            _unlink_quietly(temp_path)
            raise SourceError(f"write failed, original left as it was: {error.strerror or error}") from None
        except BaseException:
            _unlink_quietly(temp_path)
            raise


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
