"""An emulated ``torch.neuron`` device module (the API porter's rules emit), backed by the CPU.

Registered with ``torch._register_device_module("neuron", ...)`` after
``torch.utils.rename_privateuse1_backend("neuron")``, so ``torch.neuron.*`` calls in a ported script
resolve exactly as they do with TorchNeuron installed. Seeds drive the CPU generator (the emulated
device draws its random numbers there), memory counters return zeros, streams and events are
synchronous stand-ins.

As strict as the real module: every function ``build()`` puts on ``torch.neuron`` has the signature
of torch-neuronx's own (``rules/_tables/neuron_api.py`` records them with their sources, and
``tests/test_neuron_api.py`` compares the two), and rejects what it rejects with the same exception
type: ``Stream`` takes keywords only, ``Event`` has no ``interprocess``, ``is_bf16_supported()`` no
arguments, ``get_device_name`` raises ValueError for a str or None, ``set_device`` refuses a str and,
in a distributed job, any index but the local rank; device properties carry only ``name`` and
``total_memory``. A port that would crash on Trainium crashes here.

The module-level ``Event``/``Stream``/``current_stream``/``default_stream``/``stream``/``device`` are
CUDA-shaped stand-ins: the original's emulated ``torch.cuda`` uses them (``patches.py``), and CUDA
accepts more than Neuron. ``torch.neuron`` gets the strict versions registered in ``API``.
"""

from __future__ import annotations

import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from porter.check.harness.state import STATE

# In a distributed job the device index equals the local rank and each process sees its own
# logical core (NeuronDevice.cpp: set_local_device_start_index): the emulation follows torchrun.
_current = int(os.environ.get("LOCAL_RANK", "0"))
_initialized = False

# name -> the object torch.neuron.<name> is (filled by @_api below, read by build()).
API: dict[str, Any] = {}
F = TypeVar("F", bound=Callable[..., Any])


def _api(name: str | None = None) -> Callable[[F], F]:
    def register(fn: F) -> F:
        API[name or fn.__name__] = fn
        return fn

    return register


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


@_api()
def is_available() -> bool:
    return not _caller_is_torch()


@_api()
def device_count() -> int:
    return int(os.environ.get("LOCAL_WORLD_SIZE", "1"))


@_api()
def current_device() -> int:
    return _current


def _local_rank() -> int | None:
    """This process's local rank once init_process_group has run (from then on one core per
    process), else None. torch_neuronx takes LOCAL_RANK (torchrun), else derives it through the
    store by host; the emulation is one host, so that is the global rank (mp.spawn ranks)."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return None
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    return int(dist.get_rank())


@_api()
def set_device(device: Any) -> None:
    """torch_neuronx: ``getattr(device, "index", device)``, then the Python range check, then C++'s."""
    global _current
    index = getattr(device, "index", device)
    if index is None:
        index = current_device()
    if not isinstance(index, int):  # the real one fails comparing it with 0
        raise TypeError(f"'<' not supported between instances of '{type(index).__name__}' and 'int'")
    if index < 0 or index >= device_count():
        raise ValueError(f"Invalid device id: {index}. Valid range is 0 to {device_count() - 1}")
    local = _local_rank()
    if local is not None:
        if index != local:  # C++ std::invalid_argument, a ValueError through pybind11
            raise ValueError(
                f"Device index {index} is out of range. Valid range is {local} to {local} for this process"
            )
    _current = index


def _device_index(device: Any, optional: bool = False) -> int | None:
    """torch_neuronx._get_device_index: neuron devices only."""
    if device is None:
        return None if optional else current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "neuron":
            raise ValueError(f"Expected neuron device, got {device.type}")
        return device.index if device.index is not None else current_device()
    if isinstance(device, int):
        return device
    raise ValueError(f"Invalid device specification: {device}")


class device:  # noqa: N801 - CUDA-shaped (the original's torch.cuda.device): one emulated device
    """Context manager selecting a device; accepts what ``torch.cuda.device`` accepts."""

    def __init__(self, device: Any) -> None:
        self.index = device

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _NeuronDevice:
    """torch_neuronx.device: switches the current device for the block (with set_device's checks)."""

    def __init__(self, device: Any) -> None:
        self.idx = _device_index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = current_device()
        if self.prev_idx != self.idx:
            set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.prev_idx != self.idx and self.prev_idx != -1:
            set_device(self.prev_idx)


@_api("device")
def _neuron_device(device_spec: Any) -> _NeuronDevice:
    return _NeuronDevice(device_spec)


@_api()
def synchronize(device: Any = None) -> None:
    _device_index(device, optional=True)


# The CPU generator only: torch.manual_seed() itself calls the device module's manual_seed_all.
@_api()
def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


@_api()
def manual_seed_all(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


@_api()
def seed() -> None:
    torch.default_generator.seed()


@_api()
def seed_all() -> None:
    torch.default_generator.seed()


@_api()
def initial_seed() -> int:
    return torch.initial_seed()


@_api()
def get_rng_state(device: Any = None) -> torch.Tensor:
    return torch.get_rng_state()


@_api()
def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
    torch.set_rng_state(state)


# Memory counters: torch_neuronx.memory._get_device_index accepts any device (unknown -> current).
@_api()
def memory_allocated(device: Any = None) -> int:
    return 0


@_api()
def max_memory_allocated(device: Any = None) -> int:
    return 0


@_api()
def memory_reserved(device: Any = None) -> int:
    return 0


@_api()
def max_memory_reserved(device: Any = None) -> int:
    return 0


@_api()
def memory_stats(device: Any = None) -> dict[str, Any]:
    """Neuron's key schema (nested dicts), not CUDA's flat ``allocated_bytes.all.current`` keys."""
    zeros = {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
    return {
        "allocated_bytes": dict(zeros),
        "reserved_bytes": dict(zeros),
        "active_bytes": dict(zeros),
        "num_alloc_retries": 0,
        "num_ooms": 0,
        "num_tensor_frees": 0,
        "allocation_requests": 0,
    }


@_api()
def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    return "emulated neuron device (porter check): no device memory is used"


@_api()
def reset_peak_memory_stats(device: Any = None) -> None:
    return None


@_api()
def reset_accumulated_memory_stats(device: Any = None) -> None:
    return None


@_api()
def empty_cache() -> None:
    return None


@_api()
def get_device_name(device: Any = 0) -> str:
    if isinstance(device, torch.device):
        return str(device)
    if isinstance(device, int):
        return f"neuron:{device}"
    raise ValueError(f"Incorrect device argument found, expected torch.device or int type, found {type(device)}")


class _NeuronDeviceProperties:
    """Only what TorchNeuron's properties carry: reading ``major`` or ``multi_processor_count`` fails."""

    __slots__ = ("name", "total_memory")

    def __init__(self) -> None:
        self.name = "trn2 (porter check emulation)"  # the real one: the instance type
        self.total_memory = 24 * 2**30

    def __repr__(self) -> str:
        return f"<NeuronDeviceProperties(name='{self.name}', total_memory={self.total_memory})>"


@_api()
def get_device_properties(device: Any = None) -> _NeuronDeviceProperties:
    spec = str(device) if device is not None else current_device()
    if isinstance(spec, str) and "neuron" in spec:
        parsed = torch.device(spec)
        if parsed.type != "neuron":
            raise ValueError(f"Expected neuron device, got {parsed.type}")
        index = parsed.index if parsed.index is not None else 0
    else:
        index = int(spec)  # ValueError for "cuda:0", as in torch_neuronx
    if index < 0 or index >= device_count():
        raise ValueError(f"Invalid device id: {index}")
    return _NeuronDeviceProperties()


@_api()
def is_bf16_supported() -> bool:
    return True


@_api()
def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float32, torch.float16, torch.bfloat16]


@_api()
def init() -> None:
    global _initialized
    _initialized = True


@_api()
def is_initialized() -> bool:
    """The runtime starts on ``init()`` or the first tensor on the device."""
    return _initialized or STATE.reached_device


def _is_in_bad_fork() -> bool:
    return False


API["_is_in_bad_fork"] = _is_in_bad_fork


class Event:
    """Synchronous event: ``elapsed_time`` measures host wall time between two records.

    CUDA-shaped (``interprocess``/``external`` accepted) for the original; ``torch.neuron.Event``
    is the strict factory below.
    """

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, external: bool = False
    ) -> None:
        self._t: float | None = None

    def record(self, stream: Any = None) -> None:
        self._t = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end: Event) -> float:
        if self._t is None or end._t is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time")
        return (end._t - self._t) * 1000.0


class Stream:
    """Synchronous stream: work issued on it has already run when it is asked. CUDA-shaped."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = torch.device(torch._C._get_privateuse1_backend_name(), 0)

    def wait_stream(self, stream: Stream) -> None:
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

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@_api("Event")
def _neuron_event(enable_timing: bool = False, blocking: bool = False) -> Event:
    return Event(enable_timing=enable_timing, blocking=blocking)


@_api("Stream")
def _neuron_stream(**kwargs: Any) -> Stream:
    """torch.neuron.Stream(**kwargs) -> Stream(device=None, priority=0, **kwargs)."""
    if kwargs.get("device") is not None:
        _device_index(kwargs["device"])
    return Stream(**kwargs)


_default: list[Stream] = []


def current_stream(device: Any = None) -> Stream:
    if not _default:
        _default.append(Stream())
    return _default[0]


default_stream = current_stream


@_api("current_stream")
def _neuron_current_stream(device: Any = None) -> Stream:
    _device_index(device, optional=True)
    return current_stream()


@_api("default_stream")
def _neuron_default_stream(device: Any = None) -> Stream:
    _device_index(device, optional=True)
    return current_stream()


@_api()
def set_stream(stream: Stream) -> None:
    return None


class _StreamContext:
    """Mirrors torch.cuda.stream / torch_neuronx.StreamContext (synchronous: nothing to switch)."""

    def __init__(self, stream: Stream | None) -> None:
        self.s = stream

    def __enter__(self) -> Stream | None:
        return self.s

    def __exit__(self, *exc: object) -> None:
        return None


stream = _StreamContext  # CUDA-shaped name used by patches.py


@_api("stream")
def _neuron_stream_context(stream: Stream | None) -> _StreamContext:
    return _StreamContext(stream)


@_api()
def wait_stream(stream: Stream) -> None:
    return None


@_api()
def wait_event(event: Event) -> None:
    return None


@_api()
def record_event(event: Event | None = None) -> Event:
    return current_stream().record_event(event)


@_api()
def query() -> bool:
    return True


@_api()
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


@_api()
def reset_dynamo_metrics() -> None:
    STATE.graphs.clear()


_MEMORY_NAMES = (
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
    "memory_summary", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
)


def build() -> types.ModuleType:
    """The module object registered as ``torch.neuron``."""
    module = types.ModuleType("torch.neuron", __doc__)
    for name, value in API.items():
        setattr(module, name, value)
    memory = types.ModuleType("torch.neuron.memory", "torch_neuronx.memory (emulated)")
    for name in _MEMORY_NAMES:
        setattr(memory, name, API[name])
    module.memory = memory  # type: ignore[attr-defined]
    return module
