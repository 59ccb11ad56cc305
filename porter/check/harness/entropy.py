"""The run's OS entropy, pinned: what a script draws "from the OS" is the same in every run of a check.

Seeding ``random``, ``numpy`` and ``torch`` (harness/main.py) leaves every generator a script or its
library makes *without* a seed on the operating system's entropy, different at every run, so an
original differed from itself and parity could not judge its port. Measured on torchrl 0.14.1's
scripts: gymnasium's ``reset()`` with no seed makes ``np.random.SeedSequence(None)``, whose entropy is
``secrets.randbits`` → ``random._urandom`` (CartPole in dqn_cartpole is never seeded; sac's eval
env neither). Pinned here, in the launched process and in every process the script starts:

- ``random._urandom`` (``secrets``, ``SystemRandom``, and through them numpy's ``SeedSequence()``,
  ``default_rng()``, ``RandomState()``, ``np.random.seed()``) and ``os.urandom`` (``uuid4``, keys);
- ``random.Random.seed(None)`` (``random.Random()``, ``random.seed()``: C's own urandom call);
- ``torch.seed()`` (``default_generator.seed()``: a nondeterministic seed from C++).

The bytes come from a SHA-512-seeded ``random.Random`` keyed by the check's seed, the process's
place in the run (``main``; a spawned child ``main/spawn1``; a forked one ``main/fork1``) and the
module that asked (the first caller outside ``random``/``secrets``/``os``/``uuid``: gymnasium's
``seeding``, the script's ``__main__``). So two processes that would draw independent entropy still
do, and the original and its port draw the same bytes for the same request although the port's
process imports more (Dynamo, sympy: their import-time ``Random()`` draws do not shift the script's). Python's hash seed (set iteration order) is pinned by the runner
(``PYTHONHASHSEED``, inherited by every child).

Left real: ``tempfile`` and ``uuid1`` names (``tempfile``'s name generator is exempt): they feed no
number a script trains on, and runs of one check go side by side in the same temp folder.
"""

from __future__ import annotations

import os
import random
import sys
import types
from typing import Any

_STATE: dict[str, Any] = {"seed": 0, "stream": "main", "forks": 0, "spawns": 0, "rngs": {}, "installed": False}
_EXEMPT_MODULES = ("tempfile",)
_PLUMBING = ("random", "secrets", "os", "uuid", __name__)


def stream() -> str:
    return str(_STATE["stream"])


def next_spawn_stream() -> str:
    """The stream name of the next child this process spawns (multiprocessing's spawn/forkserver)."""
    _STATE["spawns"] += 1
    return f"{_STATE['stream']}/spawn{_STATE['spawns']}"


def _key(seed: int, name: str) -> None:
    _STATE.update(seed=seed, stream=name, forks=0, spawns=0, rngs={})


def _asker() -> str:
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") in _PLUMBING:
        frame = frame.f_back
    return str(frame.f_globals.get("__name__")) if frame is not None else "?"


def _bytes(n: int) -> bytes:
    who = _asker()
    rng = _STATE["rngs"].get(who)
    if rng is None:
        rng = _STATE["rngs"][who] = random.Random(0)  # seeded below; never None: that would draw
        # str seeds hash with SHA-512: deterministic, whatever PYTHONHASHSEED says
        _ORIGINAL_SEED(rng, f"porter-check-entropy:{_STATE['seed']}:{_STATE['stream']}:{who}", 2)
    return bytes(rng.randbytes(n)) if n > 0 else b""


def _urandom(n: int) -> bytes:
    return _bytes(int(n))


def _exempt() -> bool:
    frame: types.FrameType | None = sys._getframe(2)
    for _ in range(3):
        if frame is None:
            return False
        if frame.f_globals.get("__name__") in _EXEMPT_MODULES:
            return True
        frame = frame.f_back
    return False


_ORIGINAL_SEED = random.Random.seed
_ORIGINAL_URANDOM = os.urandom


def _seed(self: random.Random, a: Any = None, version: int = 2) -> None:
    if a is None and not _exempt():
        a = int.from_bytes(_bytes(32), "big")
    _ORIGINAL_SEED(self, a, version)


def pin(seed: int, name: str = "main") -> None:
    """Pin this process's OS entropy to (seed, name); idempotent, re-keys when called again."""
    _key(int(seed), name)
    if _STATE["installed"]:
        return
    _STATE["installed"] = True
    os.urandom = _urandom
    random._urandom = _urandom  # type: ignore[attr-defined]
    random.Random.seed = _seed  # type: ignore[method-assign]
    # random's module functions are bound methods of one instance, bound at its import
    random.seed = random._inst.seed  # type: ignore[attr-defined]
    _pin_torch()
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def _before_fork() -> None:
    _STATE["forks"] += 1


def _after_fork_in_child() -> None:
    # a forked child inherits the parent's stream: with real entropy the two would draw different bytes
    _key(int(_STATE["seed"]), f"{_STATE['stream']}/fork{_STATE['forks']}")


def _pin_torch() -> None:
    import torch

    def seed() -> int:
        value = int.from_bytes(_bytes(8), "big") & ((1 << 63) - 1)
        torch.manual_seed(value)
        return value

    torch.seed = seed
    torch.random.seed = seed
