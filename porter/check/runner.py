"""Runs a script under the harness in a subprocess: its own argv, ``__main__``, working directory.

The script never runs in porter's process: it may crash, hang, fork workers or leave threads behind,
and it needs process-wide emulation (a renamed PrivateUse1 backend, patched torch entry points) that
must not leak into porter. The result comes back as JSON in a file; a timeout kills the whole
process group.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import porter

PORTER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(porter.__file__)))
OUTPUT_TAIL_CHARS = 6000


@dataclass(frozen=True)
class RunSpec:
    """One harness run. ``role``: "port" or "original"; ``semantic``: fp32, no dropout (parity)."""

    script: str
    args: tuple[str, ...] = ()
    role: str = "port"
    target: str = "emulated"
    steps: int = 3
    seed: int = 0
    semantic: bool = False
    nudge: bool = False  # each optimizer step then moves every parameter one ulp (the sensitivity run)
    timeout: float = 300.0
    nproc: int = 1
    dump_dir: str | None = None
    bisect: bool = False
    cwd: str | None = None
    extra_path: tuple[str, ...] = ()
    extra_env: tuple[tuple[str, str], ...] = ()  # set last (tests; a launcher's variables)
    on_stage: Callable[[str], None] | None = field(default=None, compare=False)  # rank 0's stage lines, as they come


@dataclass(frozen=True)
class RunResult:
    """The raw record (rank 0's), plus what the process itself did."""

    record: dict[str, Any] | None
    returncode: int | None
    timed_out: bool
    wall_s: float
    stdout: str
    stderr: str
    ranks: tuple[dict[str, Any] | None, ...] = field(default=())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawns_ranks(script: str) -> bool:
    """True when the script starts its ranks itself (``mp.spawn``, ``start_processes``): it is then
    launched once, with LOCAL_WORLD_SIZE=N so that ``device_count()`` says how many to start."""
    try:
        with open(script, encoding="utf-8", errors="replace") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("spawn", "start_processes") and _from_multiprocessing(func):
                return True
    return False


def _from_multiprocessing(func: ast.expr) -> bool:
    """``mp.spawn`` / ``torch.multiprocessing.spawn`` / a bare ``spawn`` (imported by name)."""
    if isinstance(func, ast.Name):
        return True
    text = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
    return text in ("mp", "tmp", "torch_mp", "multiprocessing") or text.endswith("multiprocessing")


def _env(spec: RunSpec, rank: int, port: int) -> dict[str, str]:
    env = dict(os.environ)
    path = [PORTER_ROOT, *spec.extra_path]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env["PYTHONUNBUFFERED"] = "1"
    # str/bytes hashes (set iteration order) the same in every run and every child: harness/entropy.py
    env["PYTHONHASHSEED"] = str(spec.seed % 2**32)
    # A Hydra app's crash then raises its own exception, with its traceback, instead of Hydra printing
    # the message and exiting 1 (hydra/_internal/utils.py, run_and_report): the crash is named at the
    # script's line that raised, not at its `main()` call.
    env.setdefault("HYDRA_FULL_ERROR", "1")
    env.update(dict(spec.extra_env))
    if spec.target == "emulated":
        # Never autoload a real torch_neuronx into an emulated run.
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    if spec.nproc > 1 and spawns_ranks(spec.script):
        # `python train.py` that starts its own ranks: no launcher variables (each child gets its rank
        # from mp.spawn); the emulated host shows N devices. A stale RANK/LOCAL_RANK=0 inherited by
        # every child would pin them all to device 0.
        env.update(LOCAL_WORLD_SIZE=str(spec.nproc))
        for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
            env.pop(name, None)
    elif spec.nproc > 1:
        env.update(
            RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(spec.nproc),
            LOCAL_WORLD_SIZE=str(spec.nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
        )
    return env


class _Stages:
    """Forwards the stage lines rank 0's harness appends (``harness.state.stage``) while waiting."""

    def __init__(self, path: str, emit: Callable[[str], None] | None) -> None:
        self.path, self.emit, self.offset = path, emit, 0

    def wait(self, proc: subprocess.Popen[bytes], deadline: float) -> None:
        while True:
            left = deadline - time.perf_counter()
            try:
                proc.wait(timeout=max(0.1, min(left, 0.5)) if self.emit else max(0.1, left))
                self.poll()
                return
            except subprocess.TimeoutExpired:
                self.poll()
                if time.perf_counter() >= deadline:
                    raise

    def poll(self) -> None:
        if self.emit is None:
            return
        try:
            with open(self.path, encoding="utf-8", errors="replace") as handle:
                handle.seek(self.offset)
                text = handle.read()
        except OSError:
            return
        complete = text[: text.rfind("\n") + 1]
        self.offset += len(complete.encode("utf-8"))
        for line in complete.splitlines():
            self.emit(line)


def _tail(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return ""
    start = text.rfind("Traceback (most recent call last):")
    if 0 <= start < len(text) - OUTPUT_TAIL_CHARS:
        # the traceback began before the tail (a long message: a dispatcher's kernel list): its first
        # and last frames and the exception line say where and what, so they are kept too
        raised = re.search(r"^\S", text[start:].split("\n", 1)[-1], re.M)
        end = start + len(text[start:].split("\n", 1)[0]) + 1 + (raised.start() if raised else 0)
        frames = text[start:end]
        if len(frames) > 2500:
            frames = frames[:1500] + "[...]\n" + frames[-1000:]
        return frames + text[end:end + 800] + "\n[...]\n" + text[-1500:]
    return text[-OUTPUT_TAIL_CHARS:]


def run(spec: RunSpec) -> RunResult:
    """Run ``spec`` to completion, stop or timeout; never raises for the script's own failures."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="porter-check-") as work:
        port = _free_port()
        procs: list[tuple[subprocess.Popen[bytes], str, str, str]] = []
        launched = 1 if spawns_ranks(spec.script) else max(1, spec.nproc)
        for rank in range(launched):
            config_path = os.path.join(work, f"config{rank}.json")
            result_path = os.path.join(work, f"result{rank}.json")
            out_path = os.path.join(work, f"stdout{rank}.txt")
            err_path = os.path.join(work, f"stderr{rank}.txt")
            cwd = spec.cwd or os.path.dirname(os.path.abspath(spec.script))
            config = {
                "script": os.path.abspath(spec.script),
                "args": list(spec.args),
                "role": spec.role,
                "target": spec.target,
                "steps": spec.steps,
                "seed": spec.seed,
                "semantic": spec.semantic,
                "nudge": spec.nudge,
                "dump_dir": os.path.join(spec.dump_dir, f"rank{rank}") if spec.dump_dir and spec.nproc > 1 else spec.dump_dir,
                "bisect": spec.bisect,
                "cwd": cwd,
                "result_path": result_path,
                "children_dir": os.path.join(work, f"children{rank}"),
            }
            with open(config_path, "w", encoding="utf-8") as handle:
                json.dump(config, handle)
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "porter.check.harness", config_path],
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                    env={**_env(spec, rank, port), "PORTER_CHECK_STAGES": os.path.join(work, f"stages{rank}.txt")},
                    cwd=cwd,
                    start_new_session=True,
                )
            procs.append((proc, result_path, out_path, err_path))
        timed_out = False
        deadline = started + spec.timeout
        stages = _Stages(os.path.join(work, "stages0.txt"), spec.on_stage)
        if spec.on_stage:
            spec.on_stage(f"started ({spec.target})")
        for proc, *_ in procs:
            try:
                stages.wait(proc, deadline)
            except subprocess.TimeoutExpired:
                timed_out = True
                break
        if timed_out:
            for proc, *_ in procs:
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait()
        records: list[dict[str, Any] | None] = []
        for _proc, result_path, _out, _err in procs:
            try:
                with open(result_path, encoding="utf-8") as handle:
                    records.append(json.load(handle))
            except (OSError, json.JSONDecodeError):
                records.append(None)
        spawned = _spawned_records(work)
        if spawned:
            launcher = records[0]
            if launcher is not None and _helpers_only(launcher, spawned):
                records[0] = _noting_helpers(launcher, spawned)
            else:
                records = _adopt_ranks(records[0], spawned)
        first = procs[0]
        return RunResult(
            record=records[0],
            returncode=first[0].returncode,
            timed_out=timed_out,
            wall_s=time.perf_counter() - started,
            stdout=_tail(first[2]),
            stderr=_tail(first[3]),
            ranks=tuple(records),
        )


def _spawned_records(work: str) -> list[dict[str, Any]]:
    """Records written by processes the script spawned itself (its ranks), rank 0 first."""
    found = []
    for path in glob.glob(os.path.join(work, "children*", "child-*.json")):
        try:
            with open(path, encoding="utf-8") as handle:
                found.append(json.load(handle))
        except (OSError, json.JSONDecodeError):
            continue
    return sorted(found, key=lambda r: (r.get("rank") is None, r.get("rank") or 0, r.get("pid") or 0))


def _trained(record: dict[str, Any] | None) -> bool:
    """The process counted a step or ran a backward()."""
    return record is not None and bool(record.get("steps") or record.get("backward_calls"))


def _helpers_only(launcher: dict[str, Any] | None, spawned: list[dict[str, Any]]) -> bool:
    """The launcher trained and no process it spawned did or has a rank: those are helpers (a torchrl
    collector's worker stepping an env, a data loader's worker), not ranks."""
    return _trained(launcher) and not any(_trained(child) or child.get("rank") is not None for child in spawned)


def _noting_helpers(launcher: dict[str, Any], spawned: list[dict[str, Any]]) -> dict[str, Any]:
    record = dict(launcher)
    graphs = sum(len(child.get("graphs", [])) for child in spawned)
    syncs = sum(int(sync.get("count", 0)) for child in spawned for sync in child.get("syncs", []))
    record["notes"] = list(dict.fromkeys([*launcher.get("notes", []),
                                          f"{len(spawned)} process(es) spawned by the script ran no training step (helpers: a "
                                          f"collector's or a loader's worker; {graphs} graph(s) compiled, {syncs} host "
                                          "sync(s) there, not checked): findings are the launcher's"]))
    return record


def _adopt_ranks(launcher: dict[str, Any] | None, spawned: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """The spawned ranks did the training: their records are the run's, rank 0's first. The
    launcher's crash (a rank raised: mp.spawn re-raises it) and compile calls stay the run's."""
    merged: list[dict[str, Any] | None] = []
    for child in spawned:
        record = dict(child)
        if launcher is not None:
            if launcher.get("status") == "crashed":
                record["status"], record["error"] = "crashed", launcher.get("error")
            # the child re-ran the script's module level (as __mp_main__): its own calls, else the launcher's
            record["compile_calls"] = child.get("compile_calls") or launcher.get("compile_calls", [])
            record["notes"] = list(dict.fromkeys([*launcher.get("notes", []), *child.get("notes", []),
                                                   f"{len(spawned)} rank(s) spawned by the script; findings are rank {spawned[0].get('rank')}'s"]))
            for key in ("wall_s", "script_s", "torch", "torch_mlir"):
                record.setdefault(key, launcher.get(key))
            record["launcher_status"] = launcher.get("status")
        merged.append(record)
    return merged
