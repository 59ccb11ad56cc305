"""Collector state shared by every part of the harness, and source-line attribution.

Runs inside the script's subprocess only. Everything recorded here is plain data (ints, strings,
tuples) so that ``dump()`` can write it as JSON without touching torch.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_PORTER_CHECK = os.path.dirname(_HERE)


@functools.lru_cache(maxsize=1)
def _torch_dir() -> str:
    import torch

    return os.path.dirname(os.path.abspath(torch.__file__))


class StopRun(BaseException):
    """Raised from the optimizer-step hook after ``--steps`` steps.

    A BaseException, so that a script's ``except Exception`` does not swallow it.
    """


@dataclass
class State:
    """What the collectors saw. One instance per subprocess (``STATE``)."""

    max_steps: int = 3
    # an enabled autocast entered / a dropout applied (p > 0, training): the semantic pass turns both
    # off, so without them an original's semantic and as-written runs are the same program
    autocast_seen: bool = False
    dropout_seen: bool = False
    steps: int = 0
    per_optimizer: dict[int, int] = field(default_factory=dict)
    # Steps are counted by optimizer.step() hooks when the script made an optimizer, else by
    # backward() calls (manual updates: ``p.data.add_(p.grad, alpha=-lr)``).
    optimizers_made: int = 0
    backward_calls: int = 0
    step_counter: str | None = None  # "optimizer.step()" | "backward()"
    # Called when --steps is reached; raises StopRun in the launched process (a spawned rank
    # writes its record and exits instead, see harness/child.py).
    on_limit: Any = None
    # (step, value) for every tensor .backward() was called on (unscaled under GradScaler)
    losses: list[tuple[int, float]] = field(default_factory=list)
    syncs: Counter = field(default_factory=Counter)  # (kind, step, user_stack) -> n
    placements: Counter = field(default_factory=Counter)  # (requested, resolved, file, line) -> n
    cuda_uses: Counter = field(default_factory=Counter)  # (api, file, line) -> n
    float64: Counter = field(default_factory=Counter)  # (op, file, line) -> n
    mixing: Counter = field(default_factory=Counter)  # (op, file, line, the script's own frame or None) -> n
    fused_scaler: Counter = field(default_factory=Counter)  # (optimizer class, file, line) -> n
    graph_breaks: list[dict[str, Any]] = field(default_factory=list)
    recompiles: list[dict[str, Any]] = field(default_factory=list)
    # The compiled functions (torch.compile of a function) now running, innermost last, each with
    # whether this is its first call: a frame two of them share is compiled again for the second.
    compiled_calls: list[tuple[str, bool]] = field(default_factory=list)
    graphs: list[dict[str, Any]] = field(default_factory=list)
    compile_calls: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    padded_tokens: int = 0
    padding_sources: set[str] = field(default_factory=set)  # "attention_mask", "input_ids == 0"
    notes: list[str] = field(default_factory=list)
    reached_device: bool = False
    # distributed: the rank this process had when the record was written (None: not distributed)
    rank: int | None = None
    # Set while the harness itself touches tensors (loss capture, padding counts): no collection.
    quiet: threading.local = field(default_factory=threading.local)

    def is_quiet(self) -> bool:
        return getattr(self.quiet, "depth", 0) > 0

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


STATE = State()


def stage(text: str) -> None:
    """Tell the parent what the run is doing (``porter check`` prints it as it goes): one line
    appended to the file named by ``PORTER_CHECK_STAGES``, when set."""
    path = os.environ.get("PORTER_CHECK_STAGES")
    if path:
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(text.replace("\n", " ") + "\n")
        except OSError:
            pass


def limit_reached() -> None:
    """--steps is reached: stop the script (the launched process) or the rank (a spawned child)."""
    if STATE.on_limit is not None:
        STATE.on_limit()
    raise StopRun()


def optimizer_stepped(key: int) -> None:
    STATE.per_optimizer[key] = STATE.per_optimizer.get(key, 0) + 1
    STATE.step_counter = "optimizer.step()"
    before, STATE.steps = STATE.steps, max(STATE.per_optimizer.values())
    if STATE.steps != before:
        stage(f"step {STATE.steps}/{STATE.max_steps}")
    if STATE.steps >= STATE.max_steps:
        limit_reached()


def backward_done() -> None:
    """A backward() call returned: a step when the script made no optimizer (a manual update loop)."""
    STATE.backward_calls += 1
    if STATE.optimizers_made or STATE.per_optimizer:
        return
    STATE.step_counter = "backward()"
    STATE.steps = STATE.backward_calls
    stage(f"step {STATE.steps}/{STATE.max_steps}")
    if STATE.steps >= STATE.max_steps:
        limit_reached()


class quiet:
    """Context manager: the harness's own tensor work is not collected."""

    def __enter__(self) -> None:
        STATE.quiet.depth = getattr(STATE.quiet, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        STATE.quiet.depth -= 1


_SKIP_PREFIXES: tuple[str, ...] = ()
# Decorator plumbing between the user's call and torch (``@deprecated`` wrappers, context managers).
_WRAPPER_FILES = ("/contextlib.py", "/typing_extensions.py", "/functools.py")


def _wrapper(filename: str) -> bool:
    return filename.endswith(_WRAPPER_FILES)


def _skip_prefixes() -> tuple[str, ...]:
    """Frames never attributed to the user: torch, the harness, and the standard library."""
    global _SKIP_PREFIXES
    if not _SKIP_PREFIXES:
        import sysconfig

        stdlib = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
        prefixes = [_torch_dir() + os.sep, _PORTER_CHECK + os.sep, "<frozen ", "<string>"]
        if not any(os.path.abspath(p).startswith(stdlib) for p in sys.path if "-packages" in p):
            prefixes.append(stdlib)  # only when site-packages does not live under it
        _SKIP_PREFIXES = tuple(prefixes)
    return _SKIP_PREFIXES


def user_location(start: FrameType | None = None) -> tuple[str, int]:
    """The first frame outside torch and the harness: where the user's (or a library's) code asked.

    Library frames (transformers, accelerate) are kept: a host sync inside the Trainer is still a
    host sync, and its line tells the user which setting causes it.
    """
    frame: FrameType | None = start if start is not None else sys._getframe(1)
    skip = _skip_prefixes()
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip) and not _wrapper(filename):
            return filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


def project_frame(start: FrameType | None = None) -> tuple[str, int] | None:
    """The innermost frame of the script's own code (outside torch, the harness and any
    site-packages): the line of the script that called into the library where something happened.
    None when no such frame is on the stack."""
    frame: FrameType | None = start if start is not None else sys._getframe(1)
    skip = _skip_prefixes()
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip) and not _wrapper(filename) and not in_library(filename):
            return filename, frame.f_lineno
        frame = frame.f_back
    return None


def in_library(path: str) -> bool:
    """A file of an installed package (site-packages / dist-packages), not the script's project."""
    return "site-packages" in path or "dist-packages" in path


def user_stack(limit: int = 8, project_limit: int = 8) -> tuple[tuple[str, int], ...]:
    """Up to ``limit`` frames outside torch and the harness, innermost first, then up to
    ``project_limit`` more of the script's own (files outside any site-packages).

    A sync inside a helper that a logging branch calls is still inside the logging interval: the
    caller's lines are needed to tell, and under a library's deep stack (torchrl's env rollout inside
    the script's evaluation, 20 frames down) they are past the innermost eight.
    """
    frame: FrameType | None = sys._getframe(1)
    skip = _skip_prefixes()
    found: list[tuple[str, int]] = []
    project = 0
    while frame is not None and project < project_limit:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip) and not _wrapper(filename):
            if len(found) < limit:
                found.append((filename, frame.f_lineno))
            elif "-packages" + os.sep not in filename:
                found.append((filename, frame.f_lineno))
                project += 1
        frame = frame.f_back
    return tuple(found)


def dump() -> dict[str, Any]:
    """The raw record as JSON-ready data."""
    s = STATE
    return {
        "steps": s.steps,
        "losses": s.losses,
        "autocast_seen": s.autocast_seen,
        "dropout_seen": s.dropout_seen,
        "syncs": [
            {
                "kind": k,
                "file": stack[0][0] if stack else "<unknown>",
                "line": stack[0][1] if stack else 0,
                "stack": [list(f) for f in stack],
                "step": st,
                "count": n,
            }
            for (k, st, stack), n in sorted(s.syncs.items(), key=lambda kv: (kv[0][1], kv[0][2]))
        ],
        "placements": [
            {"requested": r, "resolved": res, "file": f, "line": ln, "count": n}
            for (r, res, f, ln), n in s.placements.items()
        ],
        "cuda_uses": [{"api": a, "file": f, "line": ln, "count": n} for (a, f, ln), n in s.cuda_uses.items()],
        "float64": [{"op": o, "file": f, "line": ln, "count": n} for (o, f, ln), n in s.float64.items()],
        "mixing": [{"op": o, "file": f, "line": ln, "via": via, "count": n} for (o, f, ln, via), n in s.mixing.items()],
        "fused_scaler": [{"optimizer": o, "file": f, "line": ln, "count": n} for (o, f, ln), n in s.fused_scaler.items()],
        "graph_breaks": s.graph_breaks,
        "recompiles": s.recompiles,
        "graphs": s.graphs,
        "compile_calls": s.compile_calls,
        "tokens": s.tokens,
        "padded_tokens": s.padded_tokens,
        "padding_sources": sorted(s.padding_sources),
        "notes": s.notes,
        "reached_device": s.reached_device,
        "step_counter": s.step_counter,
        "backward_calls": s.backward_calls,
        "rank": s.rank,
    }
