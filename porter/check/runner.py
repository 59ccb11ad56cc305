"""Runs a script under the harness in a subprocess: its own argv, ``__main__``, working directory.

The script never runs in porter's process: it may crash, hang, fork workers or leave threads behind,
and it needs process-wide emulation (a renamed PrivateUse1 backend, patched torch entry points) that
must not leak into porter. The result comes back as JSON in a file; a timeout kills the whole
process group.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
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
    timeout: float = 300.0
    nproc: int = 1
    dump_dir: str | None = None
    bisect: bool = False
    cwd: str | None = None
    extra_path: tuple[str, ...] = ()


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


def _env(spec: RunSpec, rank: int, port: int) -> dict[str, str]:
    env = dict(os.environ)
    path = [PORTER_ROOT, *spec.extra_path]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env["PYTHONUNBUFFERED"] = "1"
    if spec.target == "emulated":
        # Never autoload a real torch_neuronx into an emulated run.
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    if spec.nproc > 1:
        env.update(
            RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(spec.nproc),
            LOCAL_WORLD_SIZE=str(spec.nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
        )
    return env


def _tail(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return ""
    return text[-OUTPUT_TAIL_CHARS:]


def run(spec: RunSpec) -> RunResult:
    """Run ``spec`` to completion, stop or timeout; never raises for the script's own failures."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="porter-check-") as work:
        port = _free_port()
        procs: list[tuple[subprocess.Popen[bytes], str, str, str]] = []
        for rank in range(max(1, spec.nproc)):
            config_path = os.path.join(work, f"config{rank}.json")
            result_path = os.path.join(work, f"result{rank}.json")
            out_path = os.path.join(work, f"stdout{rank}.txt")
            err_path = os.path.join(work, f"stderr{rank}.txt")
            config = {
                "script": os.path.abspath(spec.script),
                "args": list(spec.args),
                "role": spec.role,
                "target": spec.target,
                "steps": spec.steps,
                "seed": spec.seed,
                "semantic": spec.semantic,
                "dump_dir": os.path.join(spec.dump_dir, f"rank{rank}") if spec.dump_dir and spec.nproc > 1 else spec.dump_dir,
                "bisect": spec.bisect,
                "cwd": spec.cwd or os.path.dirname(os.path.abspath(spec.script)),
                "result_path": result_path,
            }
            with open(config_path, "w", encoding="utf-8") as handle:
                json.dump(config, handle)
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "porter.check.harness", config_path],
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                    env=_env(spec, rank, port),
                    cwd=config["cwd"],
                    start_new_session=True,
                )
            procs.append((proc, result_path, out_path, err_path))
        timed_out = False
        deadline = started + spec.timeout
        for proc, *_ in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.perf_counter()))
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
