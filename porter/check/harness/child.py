"""The emulation in processes the script starts itself (``mp.spawn``, ``multiprocessing`` with the
"spawn" or "forkserver" start method).

A spawned child is a fresh interpreter: without this it has no ``neuron`` device, no ``neuron``
collective backend and no collectors (``Unknown backend type neuron``). The launched process
rewrites the child's command line (``multiprocessing.spawn.get_command_line``) so that the child
runs ``bootstrap()`` before multiprocessing unpickles its target; the child then sets up the same
emulation from the same config, and writes its own record when it stops or exits. A child that ran
no step and no backward (a DataLoader worker) writes none. Forked children inherit the emulation.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from typing import Any

CONFIG_ENV = "PORTER_CHECK_CHILD_CONFIG"
_BOOT = "import porter.check.harness.child as _porter_child; _porter_child.bootstrap({stream!r}); "


def propagate(config: dict[str, Any]) -> None:
    """In the launched process: make every spawned child bootstrap the emulation first."""
    import multiprocessing.spawn as spawn

    children = config.get("children_dir")
    if not children:
        return
    os.makedirs(children, exist_ok=True)
    path = os.path.join(children, "config.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    os.environ[CONFIG_ENV] = path
    original = spawn.get_command_line
    if getattr(original, "_porter", False):
        return

    def get_command_line(**kwds: Any) -> list[str]:
        line = list(original(**kwds))
        if "-c" in line:
            from porter.check.harness import entropy

            at = line.index("-c") + 1
            line[at] = _BOOT.format(stream=entropy.next_spawn_stream()) + line[at]
        return line

    get_command_line._porter = True  # type: ignore[attr-defined]
    spawn.get_command_line = get_command_line


def bootstrap(stream: str = "") -> None:
    """In a spawned child, before its target is unpickled: the launched process's emulation.
    ``stream``: the child's own pinned OS entropy (harness/entropy.py), by its spawn order."""
    path = os.environ.get(CONFIG_ENV)
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    if stream:
        config["entropy_stream"] = stream
    from porter.check.harness import main
    from porter.check.harness.state import STATE

    mode = main.setup(config)
    mode.__enter__()  # for the child's whole life: its target runs under the emulation
    STATE.on_limit = lambda: _finish(config, exit_now=True)
    atexit.register(_finish, config, False)


def _finish(config: dict[str, Any], exit_now: bool) -> None:
    """Write this child's record (if it trained at all); at --steps, end the child there."""
    from porter.check.harness.state import STATE, dump

    if STATE.steps or STATE.backward_calls or STATE.graphs:
        record = dump()
        record.update(
            {
                "status": "stopped" if exit_now else "completed",
                "error": None,
                "role": config.get("role", "port"),
                "target": config.get("target", "emulated"),
                "pid": os.getpid(),
                "spawned": True,
                "rank": _rank(),
            }
        )
        out = os.path.join(config["children_dir"], f"child-{os.getpid()}.json")
        with open(out + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(record, handle, default=str)
        os.replace(out + ".tmp", out)
    if exit_now:
        sys.stdout.flush()
        sys.stderr.flush()
        # the other ranks stop at the same step; no collective is pending after optimizer.step()
        os._exit(0)


def _rank() -> int | None:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:  # a half-torn-down process group: the rank is unknown, not fatal
        return None
    return None
