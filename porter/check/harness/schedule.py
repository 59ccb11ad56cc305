"""Thread-pool tasks run in their turn, so the draws they make from the shared generators are the same in every run.

torch's default generator (and numpy's global one, and ``random``'s) is one per process, shared by
every thread. A task a script or its library hands to a ``concurrent.futures.ThreadPoolExecutor``
draws from it while the main thread draws too, and which draw comes first is up to the OS scheduler.
Measured on torchrl 0.14.1: its replay buffers prefetch their next samples in a thread pool
(``ReplayBuffer(prefetch=3)``: ``torch.randint`` in the sampler) while the main thread samples the
actor's actions; the original then differed from itself by up to 2x in the third step's loss
(crossq, sac, tqc, cql), and a compiled port, whose first step takes longer, drew in yet another
order. Seeds alone cannot make such a run repeatable.

Here ``submit`` waits for its task (in its worker thread, as before) before it returns: every run
makes the draws in submit order, the order a single-threaded program would, and the script computes
exactly what it computed before. A task that has not finished after ``WAIT_S`` (a pool worker that
waits for work the caller has still to do) is left running as it would have been; the run's notes
say so, since that run's draws are not pinned. A task submitted from one of its own pool's workers
is not waited for (it could need the very worker that waits).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

WAIT_S = 30.0

_STATE: dict[str, Any] = {"installed": False, "waited": 0, "late": []}


def waited() -> int:
    """How many tasks ran in their turn in this process."""
    return int(_STATE["waited"])


def _name(fn: Callable[..., Any]) -> str:
    inner = getattr(fn, "func", fn)  # functools.partial: the function it calls
    return f"{getattr(inner, '__module__', '?')}.{getattr(inner, '__qualname__', type(inner).__name__)}"


def install(note: Callable[[str], None] | None = None) -> None:
    """Make every ``ThreadPoolExecutor.submit`` in this process wait for its task; idempotent."""
    if _STATE["installed"]:
        return
    _STATE["installed"] = True
    submit = concurrent.futures.ThreadPoolExecutor.submit

    def submit_in_turn(self: concurrent.futures.ThreadPoolExecutor, fn: Callable[..., Any], /,
                       *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future = submit(self, fn, *args, **kwargs)
        if threading.current_thread() in getattr(self, "_threads", ()):
            return future
        done, _ = concurrent.futures.wait([future], timeout=WAIT_S)
        if done:
            _STATE["waited"] += 1
            if _STATE["waited"] == 1 and note is not None:
                note(f"thread-pool tasks ran in their turn (the first: {_name(fn)}): each submit waited for its task, "
                     "so every run draws from the shared random generators in the same order")
        else:
            name = _name(fn)
            if name not in _STATE["late"]:
                _STATE["late"].append(name)
                if note is not None:
                    note(f"a thread-pool task ({name}) ran on for over {WAIT_S:.0f} s after its submit: it ran beside "
                         "its caller, so this run's draws from the shared random generators are not pinned")
        return future

    concurrent.futures.ThreadPoolExecutor.submit = submit_in_turn  # type: ignore[method-assign,assignment]
