"""The words of a name, and the CUDA / abstraction words the CUDA-backend heuristic reads
(``rules/_lib/backends.py``). No libcst here: the run's cache key reads ``cuda_named`` too."""

from __future__ import annotations

import re
from pathlib import PurePath

CUDA_WORDS = frozenset({"cuda", "gpu", "gpus", "nvidia", "nccl", "cudnn"})
ABSTRACTION_WORDS = frozenset({"accelerator", "backend", "platform", "device"})

_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def words(name: str) -> tuple[str, ...]:
    """``name`` as lower-case words, split at underscores and case changes
    (``CUDA_Accelerator`` -> cuda, accelerator; ``DeviceGPU`` -> device, gpu)."""
    return tuple(word.lower() for part in name.split("_") for word in _CAMEL.findall(part))


def cuda_named(path: str) -> bool:
    """Whether the file's name (up to its first dot) has a CUDA word: ``cuda.py``,
    ``cuda_accelerator.py``, ``device_gpu.py``. Such a file holding a CUDA backend class is kept
    whole, so the port of a Python file depends on this bit of its name."""
    return bool(CUDA_WORDS.intersection(words(PurePath(path).name.split(".")[0])))
