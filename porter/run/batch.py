"""Porting many files: cache look-ups, a process pool, results streamed in a stable order.

``run_batch`` takes the discovered targets and yields ``(index, result, cached)`` in target order
as soon as every earlier target is done (a small reorder buffer over ``imap_unordered``), so output
streams while the pool works and reads the same on every run.

1. With a cache, the main process reads and hashes each file and asks the cache; hits are done
   without parsing, once the row passed its checks (``cache.decode``: digests of input, output
   and row; the output decodes) — a row that fails one is dropped and the file ported afresh.
   When everything hits, neither libcst nor a process pool is ever loaded. Misses ported in this
   process reuse the bytes, digest and ``@generated`` check of the look-up (up to
   ``KEEP_BYTES``); a worker re-reads its file and re-hashes it only to be sure it ports the
   bytes the key was made for. An empty cache (a first run) is not looked up at all: each file
   is read and hashed once, where it is ported.
2. Misses go to a pool of ``jobs`` worker processes in chunks (``imap_unordered``); each worker
   reads its file itself (nothing large crosses the pipe to it) and returns the result and its
   cache key. Workers are replaced after a bounded number of files (``maxtasksperchild``), so
   memory per worker stays bounded on trees of thousands of files. ``jobs=1`` — or a handful of
   misses, where starting workers costs more than it saves — runs in this process.
3. Files marked ``@generated`` are skipped (unless the user named them), as are files over the
   size limit (a read failure, with the reason).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from porter.engine.options import Options
from porter.engine.results import Failure, FileResult, Unchanged
from porter.engine.textio import SourceError, read_source
from porter.reports.markers import counted
from porter.rules._lib.backend_names import cuda_named
from porter.run.cache import Cache, content_digest, decode, file_key, with_path
from porter.run.discovery import Target, is_generated
from porter.run.local_imports import forget as forget_imports
from porter.run.local_imports import with_local_imports

if TYPE_CHECKING:
    import multiprocessing.context

SMALL_BATCH = 12  # at most this many files to parse: no pool (worker start-up would dominate)
FILES_PER_WORKER = 400  # a worker is replaced after about this many files (bounded memory)
KEEP_BYTES = 32 << 20  # bytes read by the cache look-up kept for in-process misses (bounded memory)
Keyed = tuple[str, str]  # (cache key, content digest of the bytes ported)


@dataclass(frozen=True)
class Task:
    index: int
    path: str
    kind: str  # py | ipynb | file (see Target.kind)
    explicit: bool
    options: Options
    with_key: bool  # compute the cache key of the bytes actually ported
    key: str | None = None  # the look-up's key and digest, when it read the file
    digest: str | None = None
    data: bytes | None = None  # the look-up's bytes (in-process misses only; never sent to a worker)


@dataclass
class Stats:
    """What a batch did, for the summary, the reports and the benchmark."""

    total: int = 0
    cache_hits: int = 0
    parsed: int = 0  # files that reached libcst (not skipped by the prefilter, its checks, or the cache)
    prefiltered: int = 0
    generated: int = 0
    workers: int = 0  # 0: everything ran in this process
    elapsed: float = 0.0


def key_kind(task: Task) -> str:
    """The kind part of a cache key. A non-Python file's port depends on its name (a
    requirements file, a Dockerfile ...): its name and folder go into the key."""
    if task.kind == "py" and cuda_named(task.path):
        return "py:cuda-named"  # it may be a CUDA backend, kept whole (rules/_lib/backends.py)
    if task.kind != "file":
        return task.kind
    parent, name = os.path.split(task.path)
    return f"file:{os.path.basename(parent)}/{name}".lower()


def port_target(task: Task) -> tuple[int, FileResult, Keyed | None]:
    """Read, check and port one file (in a worker or in-process). Never raises for a bad file."""
    data = task.data
    digest = task.digest
    if data is None:
        try:
            data = read_source(task.path, task.options.max_file_size)
        except SourceError as error:
            return task.index, Failure(task.path, str(error), kind="read"), None
        if task.with_key:
            digest = content_digest(data)
    looked_up = task.digest is not None and digest == task.digest  # same bytes the look-up checked
    if not looked_up and not task.explicit and is_generated(data):
        return task.index, Unchanged(task.path, skipped="generated"), None
    options = _with_imports(task, data)  # listed again: a module may have changed since the look-up
    keyed: Keyed | None = None
    if task.with_key and digest is not None:
        same = looked_up and task.key and options == task.options
        key = task.key if same and task.key else file_key(digest, options.cache_key(), key_kind(task))
        keyed = (key, digest)
    limit = options.time_limit
    _load(task.kind)  # imports run outside the limit: one interrupted half-way breaks the process
    try:
        with _time_limit(limit), _interrupts_seen() as seen:
            result = port_bytes(data, task.path, task.kind, options)
    except TimeLimit:
        reason = f"took longer than {limit:g} s to port (--time-limit); left as it was"
        return task.index, Failure(task.path, reason, kind="timeout"), None  # never cached
    if seen:
        raise KeyboardInterrupt  # swallowed on the way (it became the file's failure in native code): stop all the same
    return task.index, counted(result, data), keyed  # markers counted here: in parallel, bytes at hand


@contextlib.contextmanager
def _interrupts_seen() -> Iterator[list[int]]:
    """The Ctrl-C / SIGTERM signals that reached this process's Python handlers during the block
    (their handlers still run). A KeyboardInterrupt raised inside a callback from native code (libcst's
    parser builds its nodes so) may come back as another error, which the port reports as the file's
    failure: with this list the batch ends as interrupted all the same. Main thread only."""
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    previous: dict[int, Any] = {}
    for number in (int(signal.SIGINT), int(signal.SIGTERM)):
        handler = signal.getsignal(number)
        if callable(handler):
            def noting(signum: int, frame: Any, handler: Callable[..., Any] = handler) -> Any:
                seen.append(signum)
                return handler(signum, frame)

            previous[number] = signal.signal(number, noting)
    try:
        yield seen
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _with_imports(task: Task, data: bytes) -> Options:
    """The task's options with the project modules a Python file imports (``Options.imports``)."""
    return with_local_imports(task.options, task.path, data) if task.kind == "py" else task.options


def _load(kind: str) -> None:
    if kind == "ipynb":
        import porter.run.notebooks  # noqa: F401
    elif kind == "file":
        import porter.filetypes  # noqa: F401
    from porter.engine.registry import all_rules

    all_rules()  # imports libcst, the engine and every rule once


class TimeLimit(BaseException):
    """Raised inside a port that ran out of time. A BaseException, so the engine's guard against
    rule bugs (``except Exception``) does not turn it into an internal error and carry on."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the body after ``seconds`` (SIGALRM: Unix, main thread; elsewhere, or with 0,
    no limit). A port writes nothing, so interrupting it anywhere leaves the file as it was.

    The interrupt can land anywhere: inside C code that turns it into another error (``ast``
    reports a ``SystemError``), or in a callback that swallows it (a ``gc`` hook). So it is raised
    only in porter's and libcst's frames, the timer re-fires every tenth of a second until the body
    ends, and once it has fired, whatever the body ends with (an error or even a result) is a
    :class:`TimeLimit`."""
    usable = seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return
    state = {"armed": True, "expired": False}

    def expire(signum: int, frame: Any) -> None:
        if not state["armed"]:
            return
        state["expired"] = True
        # Raise only in porter's or libcst's own code: a handler that lands in foreign code (a gc
        # callback another library registered, which ignores the exception and prints it) waits
        # for the next tick.
        module = str(getattr(frame, "f_globals", {}).get("__name__", ""))
        if module.startswith(("porter", "libcst")):
            raise TimeLimit

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.1)
    try:
        yield
    except BaseException:
        if state["expired"]:
            raise TimeLimit from None
        raise
    finally:
        state["armed"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if state["expired"]:  # the interrupt was swallowed on the way: the port is over the limit all the same
        raise TimeLimit


def port_bytes(data: bytes, path: str, kind: str, options: Options) -> FileResult:
    if kind == "ipynb":
        from porter.run.notebooks import port_notebook

        return port_notebook(data, path, options)
    if kind == "file":
        from porter.filetypes import port_file

        return port_file(path, data, options)
    from porter.engine.core import port_source  # lazily: a fully cached run never loads libcst

    return port_source(data, path, options)


def run_batch(
    targets: Sequence[Target],
    options: Sequence[Options],
    jobs: int = 1,
    cache: Cache | None = None,
    stats: Stats | None = None,
    on_start: Callable[[int], None] | None = None,
    reparse: bool = True,
) -> Generator[tuple[int, FileResult, bool], None, None]:
    """Port ``targets`` (``options[i]`` for ``targets[i]``); yield ``(index, result, from_cache)``
    in index order, streaming. ``on_start(total)`` is called once the work is about to begin.
    ``reparse``: a cached port is used only if its output decodes (a notebook's loads; set when the run writes)."""
    import time

    stats = stats if stats is not None else Stats()
    stats.total = len(targets)
    started = time.perf_counter()
    forget_imports()  # a long-lived process sees the modules as they are now
    ready: dict[int, tuple[FileResult, bool]] = {}
    misses: list[Task] = []
    for index, target in enumerate(targets):
        if target.error:
            ready[index] = (Failure(target.path, target.error, kind="read"), False)
            continue
        keyed = cache is not None and cache.enabled
        misses.append(Task(index, target.path, target.kind, target.explicit, options[index], keyed))
    if cache is not None and cache.enabled and not cache.is_empty():
        misses = _look_up(misses, cache, ready, stats, reparse)
    # The pool starts before the caller's progress display (a thread): fork with no threads yet.
    pool = _pool(len(misses), jobs, stats)
    if pool is not None:  # workers read for themselves: nothing large crosses the pipe
        misses = [replace(task, data=None) for task in misses]
    if on_start is not None:
        on_start(len(targets))
    next_index = 0

    def drain() -> Iterator[tuple[int, FileResult, bool]]:
        nonlocal next_index
        while next_index in ready:
            result, cached = ready.pop(next_index)
            yield next_index, result, cached
            next_index += 1

    yield from drain()
    for index, result, key in _execute(misses, pool):
        if isinstance(result, Unchanged):
            if result.skipped in ("prefilter", "ast-check"):  # either stage of the prefilter: no libcst parse
                stats.prefiltered += 1
            elif result.skipped == "generated":
                stats.generated += 1
            else:
                stats.parsed += 1
        elif not (isinstance(result, Failure) and result.kind == "read"):
            stats.parsed += 1
        if key is not None and cache is not None:
            cache.put(key[0], result, key[1])
        ready[index] = (result, False)
        yield from drain()
    yield from drain()
    if cache is not None:
        cache.flush()
    stats.elapsed = time.perf_counter() - started


def _look_up(tasks: list[Task], cache: Cache, ready: dict[int, tuple[FileResult, bool]], stats: Stats, reparse: bool) -> list[Task]:
    """Serve what the cache knows; return the tasks still to run (with their bytes while the
    kept total stays under ``KEEP_BYTES``)."""
    keyed: list[Task] = []
    remaining: list[Task] = []
    kept = 0
    for task in tasks:
        try:
            data = read_source(task.path, task.options.max_file_size)
        except SourceError as error:
            ready[task.index] = (Failure(task.path, str(error), kind="read"), False)
            continue
        if not task.explicit and is_generated(data):
            ready[task.index] = (Unchanged(task.path, skipped="generated"), False)
            stats.generated += 1
            continue
        digest = content_digest(data)
        options = _with_imports(task, data)
        key = file_key(digest, options.cache_key(), key_kind(task))
        keyed.append(replace(task, options=options, key=key, digest=digest, data=data))
        if len(keyed) >= 500:
            remaining.extend(_serve(keyed, cache, ready, stats, reparse))
            keyed = []
    remaining.extend(_serve(keyed, cache, ready, stats, reparse))
    trimmed = []
    for task in remaining:  # bounded memory: beyond the budget a miss re-reads its file
        size = len(task.data or b"")
        kept += size
        trimmed.append(task if kept <= KEEP_BYTES else replace(task, data=None))
    return trimmed


def _serve(keyed: list[Task], cache: Cache, ready: dict[int, tuple[FileResult, bool]], stats: Stats, reparse: bool) -> list[Task]:
    rows = cache.get_many([task.key for task in keyed if task.key])
    left: list[Task] = []
    for task in keyed:
        row = rows.get(task.key or "")
        result = None
        if row is not None and task.data is not None and task.digest is not None:
            result = decode(row, task.path, task.data, task.digest, task.kind, reparse)
            if result is None:
                cache.drop(row[0])  # damaged or not for these bytes: ported afresh
        if result is None:
            left.append(task)
            continue
        ready[task.index] = (with_path(result, task.path), True)
        stats.cache_hits += 1
    return left


@dataclass
class _Pool:
    pool: Any  # multiprocessing.pool.Pool, imported only when a pool is needed
    chunk: int


def _pool(misses: int, jobs: int, stats: Stats) -> _Pool | None:
    if jobs <= 1 or misses <= SMALL_BATCH:
        return None
    workers = min(jobs, misses)
    stats.workers = workers
    chunk = 1  # a chunk's results arrive together: one file per task keeps output and the bar per file
    context = _context()
    # The fork server runs `python -c ...`, which puts the current folder first on sys.path: a
    # `porter/` folder there (a clone beside the project) would be imported instead of this
    # process's porter. PYTHONSAFEPATH (3.11+) keeps it off; the probe below catches the rest.
    saved = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        pool = context.Pool(workers, maxtasksperchild=max(1, FILES_PER_WORKER // chunk))
    finally:
        if saved is None:
            del os.environ["PYTHONSAFEPATH"]
        else:
            os.environ["PYTHONSAFEPATH"] = saved
    try:
        _probe(pool)
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    return _Pool(pool, chunk)


class WorkerError(Exception):
    """The pool's workers cannot start (or run other code than this process): the run stops."""


WORKER_START_TIMEOUT = 300.0  # seconds for a first worker to answer (it loads libcst and the rules)


def _probe(pool: Any) -> None:
    """Wait until a worker answers, and check it runs this process's porter. A worker that dies
    before answering (it cannot import porter) would be respawned by the pool for ever: the
    first such death stops the run with one clear error instead."""
    import time

    from porter.run.workers import where

    # `Pool._pool` (the worker processes) is private but stable since Python 3.3; without it
    # only the timeout applies. The pool replaces a dead worker within milliseconds, so a dead
    # one is rarely seen in the list: a worker that was replaced before any answered is dead too
    # (no worker retires before its first task, and the probe is the first task).
    started = {process.pid for process in getattr(pool, "_pool", ())}
    answer = pool.apply_async(where)
    deadline = time.monotonic() + WORKER_START_TIMEOUT
    while not answer.ready():
        workers = list(getattr(pool, "_pool", ()))
        dead = [process.exitcode for process in workers if process.exitcode not in (None, 0)]
        replaced = any(process.pid not in started for process in workers)
        if dead or replaced:
            code = f"exit code {dead[0]}" if dead else "a worker exited"
            raise WorkerError(
                f"the worker processes cannot start ({code}; their error is printed above). "
                "Is there a folder named 'porter' in the current folder? Run porter from another folder, or use -j1."
            )
        if time.monotonic() > deadline:
            raise WorkerError(f"no worker process answered within {WORKER_START_TIMEOUT:g} s; use -j1")
        answer.wait(0.05)
    theirs, ours = answer.get(), where()
    if theirs != ours:
        raise WorkerError(f"the worker processes run porter from {theirs}, this process from {ours}; use -j1")


def _execute(tasks: list[Task], pool: _Pool | None) -> Iterator[tuple[int, FileResult, Keyed | None]]:
    if pool is None:
        for task in tasks:
            yield port_target(task)
        return
    try:
        yield from pool.pool.imap_unordered(port_target, tasks, chunksize=pool.chunk)
    finally:
        pool.pool.terminate()
        pool.pool.join()


def _context() -> multiprocessing.context.BaseContext:
    """Workers come from a fork server that has loaded the engine and the rules once.

    Not plain ``fork``: the pool replaces workers (``maxtasksperchild``) from a thread at any
    moment, also while this process holds a folder lock for a write or the cache's database
    open; a forked worker would inherit those descriptors and keep the lock held for ever (seen:
    ``--out`` hung on the transformers tree). The fork server holds none of them.
    """
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["porter.run.workers"])
        return context
    return multiprocessing.get_context("spawn")


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)
