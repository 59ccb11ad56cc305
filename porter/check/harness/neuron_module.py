"""An emulated ``torch.neuron`` device module (the API porter's rules emit), backed by the CPU.

Registered with ``torch._register_device_module("neuron", ...)`` after
``torch.utils.rename_privateuse1_backend("neuron")``, so ``torch.neuron.*`` calls in a ported script
resolve exactly as they do with TorchNeuron installed. Functions mirror torch_neuronx's ``neuron.py``
(see shared/reference/neuron-facts.md §1.3): seeds drive the CPU generator (the emulated device draws
its random numbers there), memory counters return zeros, streams and events are synchronous stand-ins.
"""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import torch

from porter.check.harness.state import STATE

import os

# In a distributed job the device index equals the local rank and each process sees its own
# logical cores (neuron-facts §1.2): the emulation follows torchrun's environment.
_current = int(os.environ.get("LOCAL_RANK", "0"))


def _caller_is_torch(depth: int = 2) -> bool:
    """True when the function asking is part of the torch package itself.

    Why: Dynamo's stream handling and ``torch.accelerator`` ask ``is_available()`` too, and when told
    True they ask the C++ side for a PrivateUse1 device index, which a CPU-only build does not have.
    Torch's own questions get False; user and library code (transformers, accelerate) get True.
    ``torch.accelerator.is_available()`` asked by user code is answered for the user.
    """
    frame = sys._getframe(depth)
    name = frame.f_globals.get("__name__", "")
    if name == "torch.accelerator" and frame.f_back is not None:
        outer = frame.f_back.f_globals.get("__name__", "")
        return outer == "torch" or outer.startswith("torch.")
    return name == "torch" or name.startswith("torch.")


def is_available() -> bool:
    return not _caller_is_torch()


def device_count() -> int:
    return int(os.environ.get("LOCAL_WORLD_SIZE", "1"))


def current_device() -> int:
    return _current


def set_device(device: Any) -> None:
    global _current
    index = device if isinstance(device, int) else torch.device(device).index or 0
    last = device_count() - 1
    if not 0 <= index <= last:
        raise RuntimeError(f"Device index {index} is out of range. Valid range is 0 to {last} for this process")
    _current = index


class device:  # noqa: N801 - mirrors torch.cuda.device
    """Context manager selecting a device (one emulated device: index 0)."""

    def __init__(self, index: Any) -> None:
        self.index = index

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def synchronize(device: Any = None) -> None:
    return None


# The CPU generator only: torch.manual_seed() itself calls the device module's manual_seed_all.
def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


def seed() -> None:
    torch.default_generator.seed()


def seed_all() -> None:
    torch.default_generator.seed()


def initial_seed() -> int:
    return torch.initial_seed()


def get_rng_state(device: Any = "neuron") -> torch.Tensor:
    return torch.get_rng_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "neuron") -> None:
    torch.set_rng_state(new_state)


def _zero(device: Any = None) -> int:
    return 0


memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _zero


def memory_stats(device: Any = None) -> dict[str, Any]:
    """Neuron's key schema (nested dicts), not CUDA's flat ``allocated_bytes.all.current`` keys."""
    zeros = {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
    return {
        "allocated_bytes": dict(zeros),
        "reserved_bytes": dict(zeros),
        "active_bytes": dict(zeros),
        "num_alloc_retries": 0,
        "num_ooms": 0,
    }


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    return "emulated neuron device (porter check): no device memory is used"


def reset_peak_memory_stats(device: Any = None) -> None:
    return None


reset_accumulated_memory_stats = reset_peak_memory_stats


def empty_cache() -> None:
    return None


def get_device_name(device: Any = None) -> str:
    return f"neuron:{_current}"


class _Props:
    name = "neuron:0"
    total_memory = 24 * 2**30

    def __repr__(self) -> str:
        return f"_NeuronDeviceProperties(name='{self.name}', total_memory={self.total_memory})"


def get_device_properties(device: Any = None) -> _Props:
    return _Props()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16, torch.float32]


def is_initialized() -> bool:
    return True


def _is_in_bad_fork() -> bool:
    return False


class Event:
    """Synchronous event: ``elapsed_time`` measures host wall time between two records."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self._t: float | None = None

    def record(self, stream: Any = None) -> None:
        self._t = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end: "Event") -> float:
        if self._t is None or end._t is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time")
        return (end._t - self._t) * 1000.0


class Stream:
    """Synchronous stream: work issued on it has already run when it is asked."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = torch.device(torch._C._get_privateuse1_backend_name(), 0)

    def wait_stream(self, stream: "Stream") -> None:
        return None

    def wait_event(self, event: Event) -> None:
        return None

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record()
        return event

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_default: list[Stream] = []


def current_stream(device: Any = None) -> Stream:
    if not _default:
        _default.append(Stream())
    return _default[0]


default_stream = current_stream


def set_stream(stream: Stream) -> None:
    return None


class stream:  # noqa: N801 - mirrors torch.cuda.stream
    def __init__(self, s: Stream | None) -> None:
        self.s = s

    def __enter__(self) -> Stream | None:
        return self.s

    def __exit__(self, *exc: object) -> None:
        return None


def get_dynamo_metrics() -> list[dict[str, Any]]:
    """One entry per graph the emulated backend compiled (shape of torch_neuronx's metrics)."""
    return [
        {
            "graph_id": g["graph_id"],
            "graph_name": f"model_{g['compile_id']}_{g['kind']}_{g['graph_id']}",
            "has_collectives": False,
            "graph_node_count": g["nodes"],
        }
        for g in STATE.graphs
    ]


def reset_dynamo_metrics() -> None:
    STATE.graphs.clear()


def build() -> types.ModuleType:
    """The module object registered as ``torch.neuron``."""
    module = types.ModuleType("torch.neuron", __doc__)
    names = [
        "is_available", "device_count", "current_device", "set_device", "device", "synchronize",
        "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
        "set_rng_state", "memory_allocated", "max_memory_allocated", "memory_reserved",
        "max_memory_reserved", "memory_stats", "memory_summary", "reset_peak_memory_stats",
        "reset_accumulated_memory_stats", "empty_cache", "get_device_name", "get_device_properties",
        "is_bf16_supported", "get_amp_supported_dtype", "is_initialized", "_is_in_bad_fork", "Event",
        "Stream", "current_stream", "default_stream", "set_stream", "stream", "get_dynamo_metrics",
        "reset_dynamo_metrics",
    ]
    g = globals()
    for name in names:
        setattr(module, name, g[name])
    module.memory = module  # torch.neuron.memory.* spellings
    return module
