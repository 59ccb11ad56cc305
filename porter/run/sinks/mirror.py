"""``--out DIR``: a faithful, runnable copy of each input below ``DIR``.

Ported files hold the port, every other file (data, configs, excluded or unparseable code) is
copied as it is, keeping its permission bits (and, for copies, its modification time, which lets
a re-run skip what is already there); symbolic links are reproduced as links with the same
target text, never as their target's contents. Nothing is ever written through a link inside
the output folder: a link where a file goes is replaced (atomically, by a rename), a folder of
the output that is a link is refused with a per-file error. Porter's temporary files are never
copied. Every write is a complete temporary file renamed into place, with Ctrl-C held back.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable

from porter.engine.results import Failure, FileResult, Success, Unchanged
from porter.engine.textio import SourceError, deferred_signals, directory_lock, temp_beside, write_atomic
from porter.run.discovery import tree_files
from porter.run.sinks import Item, Outputs, Sink


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class Mirror(Sink):
    def __init__(self, out_dir: str, roots: Iterable[tuple[str, str]], outputs: Outputs) -> None:
        self.top = os.path.abspath(out_dir)
        self.roots = list(roots)  # (input folder, its mirror folder)
        self.outputs = outputs
        self.done: set[str] = set()  # absolute sources already written by accept

    def accept(self, item: Item, result: FileResult, diff: str) -> FileResult:
        if item.out is None:
            return result
        destination = os.path.join(item.out, item.relative)
        source = os.path.abspath(item.path)
        try:
            if isinstance(result, Failure) and result.kind == "read" and os.path.islink(item.path):
                self.place_link(destination, os.readlink(item.path))
                self.done.add(source)
                return Unchanged(result.path, skipped="link")  # a link is reproduced, not ported
            if isinstance(result, Failure) and result.kind != "parse":
                return result
            if isinstance(result, Success):
                self.place_bytes(destination, result.new, stat.S_IMODE(os.lstat(item.path).st_mode))
            else:
                self.copy_file(item.path, destination)
        except (SourceError, OSError) as error:
            self.done.add(source)  # reported once, here
            return Failure(result.path, f"cannot write {destination}: {_why(error)}", kind="write")
        self.done.add(source)
        return result

    def finish(self) -> None:
        """Copy the files that are not ported (data, configs, excluded code) so the copy runs."""
        for root, out in self.roots:
            for relative in tree_files(root):
                source = os.path.join(root, relative)
                absolute = os.path.abspath(source)
                if absolute in self.done or inside(absolute, self.top):
                    continue
                destination = os.path.join(out, relative)
                try:
                    if os.path.islink(source):
                        self.place_link(destination, os.readlink(source))
                    else:
                        self.copy_file(source, destination)
                except (SourceError, OSError) as error:
                    self.outputs.fail(destination, f"{source}: error: cannot copy to {destination}: {_why(error)}")

    # ------------------------------------------------------------ writes that never follow a link
    def prepare(self, destination: str) -> str:
        """Create the folders of ``destination`` below the output folder, refusing any that is a
        symbolic link or not a folder. The output folder itself is the user's choice."""
        os.makedirs(self.top, exist_ok=True)
        relative = os.path.relpath(os.path.abspath(destination), self.top)
        current = self.top
        for part in relative.split(os.sep)[:-1]:
            current = os.path.join(current, part)
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                try:
                    os.mkdir(current)
                except FileExistsError:
                    info = os.lstat(current)
                else:
                    continue
            if stat.S_ISLNK(info.st_mode):
                raise SourceError(f"{current} is a symbolic link in the output folder; porter does not write through links")
            if not stat.S_ISDIR(info.st_mode):
                raise SourceError(f"{current} is not a folder")
        return os.path.join(current, os.path.basename(destination))

    def place_bytes(self, destination: str, data: bytes, mode: int) -> None:
        path = self.prepare(destination)
        if _holds(path, data, mode):
            return  # a re-run writes nothing
        write_atomic(path, data, mode=mode, replace_link=True)

    def copy_file(self, source: str, destination: str) -> None:
        path = self.prepare(destination)
        if _same_copy(source, path):
            return
        with directory_lock(os.path.dirname(path)), deferred_signals():
            handle, temp = temp_beside(path)
            try:
                with os.fdopen(handle, "wb") as target:
                    descriptor = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                    with os.fdopen(descriptor, "rb") as origin:
                        shutil.copyfileobj(origin, target, 1 << 20)
                shutil.copystat(source, temp, follow_symlinks=False)  # mode and times
                os.replace(temp, path)  # replaces a link there, never writes through it
            except BaseException:
                _unlink_quietly(temp)
                raise

    def place_link(self, destination: str, target: str) -> None:
        path = self.prepare(destination)
        if os.path.islink(path) and os.readlink(path) == target:
            return
        with directory_lock(os.path.dirname(path)), deferred_signals():
            temp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.urandom(4).hex()}.porter-tmp")
            os.symlink(target, temp)
            try:
                os.replace(temp, path)
            except BaseException:
                _unlink_quietly(temp)
                raise


def _holds(path: str, data: bytes, mode: int) -> bool:
    """Whether ``path`` is a regular file holding exactly ``data`` with ``mode``."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data) or stat.S_IMODE(info.st_mode) != mode:
            return False
        with open(path, "rb") as handle:
            return handle.read() == data
    except OSError:
        return False


def _same_copy(source: str, destination: str) -> bool:
    try:
        a, b = os.lstat(source), os.lstat(destination)
    except OSError:
        return False
    # copystat keeps the modification time to the nanosecond: same size, time and mode is the same copy
    return (
        stat.S_ISREG(b.st_mode)
        and a.st_size == b.st_size
        and a.st_mtime_ns == b.st_mtime_ns
        and stat.S_IMODE(a.st_mode) == stat.S_IMODE(b.st_mode)
    )


def _why(error: Exception) -> str:
    return (error.strerror if isinstance(error, OSError) and error.strerror else None) or str(error)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
