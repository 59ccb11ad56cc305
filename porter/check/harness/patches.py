"""Process-level patches the harness applies before the script runs.

Each function here changes one torch entry point in the subprocess only, for one reason:
- autocast on an emulated device runs as CPU autocast (or is switched off for the fp32 parity pass);
- GradScaler on an emulated device scales on the CPU, and remembers the unscaled loss;
- ``torch.compile`` is recorded, then routed to the emulated ``neuron`` backend (port) or run eagerly
  (original: it is the semantic baseline, and Inductor on a CPU-only torch asserts on CUDA RNG);
- ``init_process_group("neuron"|"nccl")`` runs on gloo, DDP drops ``device_ids``;
- ``torch.cuda.*`` is emulated for an original, and recorded as a finding in a port;
- dropout is an identity in the semantic pass (compiled graphs draw random numbers differently).
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

import torch

from porter.check.harness import neuron_module
from porter.check.harness.state import STATE, user_location


def _record_cuda(api: str, skip_torch_callers: bool = False) -> None:
    import sys

    if skip_torch_callers:
        caller = sys._getframe(2).f_globals.get("__name__", "")
        if caller == "torch" or caller.startswith("torch."):
            return  # torch's own bookkeeping (torch.manual_seed seeds every backend), not the script
    file, line = user_location()
    STATE.cuda_uses[(api, file, line)] += 1


def patch_autocast(emulated: tuple[str, ...], foreign: tuple[str, ...], disable: bool) -> None:
    """``autocast(device_type="neuron"|"cuda")`` becomes CPU autocast with that device's default dtype.

    Both CUDA and PrivateUse1 default to float16 when no dtype is given (the reason porter's rules
    always spell ``dtype=torch.bfloat16``), so the emulation keeps that default.
    """
    cls = torch.amp.autocast_mode.autocast
    original_init = cls.__init__

    @functools.wraps(original_init)
    def __init__(self: Any, device_type: str, dtype: Any = None, enabled: bool = True, cache_enabled: Any = None) -> None:
        if device_type in foreign:
            _record_cuda(f"torch.autocast(device_type='{device_type}')")
        if device_type in emulated or device_type in foreign:
            dtype = torch.float16 if dtype is None else dtype
            device_type = "cpu"
        if disable:
            enabled = False
        original_init(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    cls.__init__ = __init__


def patch_grad_scaler(emulated: tuple[str, ...], foreign: tuple[str, ...]) -> None:
    """GradScaler on an emulated device scales on CPU; ``scale(loss)`` remembers ``loss``."""
    cls = torch.amp.GradScaler
    original_init = cls.__init__
    original_scale = cls.scale

    @functools.wraps(original_init)
    def __init__(self: Any, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
        enabled = kwargs.get("enabled", args[4] if len(args) > 4 else True)
        if device in foreign and enabled:  # a disabled scaler is inert anywhere
            _record_cuda(f"GradScaler('{device}')")
        if device in emulated or device in foreign:
            device = "cpu"
        original_init(self, device, *args, **kwargs)

    @functools.wraps(original_scale)
    def scale(self: Any, outputs: Any) -> Any:
        scaled = original_scale(self, outputs)
        if isinstance(outputs, torch.Tensor) and isinstance(scaled, torch.Tensor):
            scaled._porter_unscaled = outputs
        return scaled

    cls.__init__ = __init__
    cls.scale = scale


def patch_compile(role: str, backend: Callable[..., Any] | None, keep_options: bool = False) -> None:
    """Record every ``torch.compile`` call; port: use the emulated neuron backend, never crash on
    ``fullgraph=True`` (graph breaks are findings); original: run eagerly."""
    original = torch.compile

    def compile(model: Any = None, *args: Any, **kwargs: Any) -> Any:  # noqa: A001
        file, line = user_location()
        requested_backend = kwargs.get("backend", "inductor")
        STATE.compile_calls.append(
            {
                "file": file,
                "line": line,
                "backend": requested_backend if isinstance(requested_backend, str) else getattr(requested_backend, "__name__", "callable"),
                "fullgraph": bool(kwargs.get("fullgraph", False)),
                "dynamic": kwargs.get("dynamic"),
                "mode": kwargs.get("mode"),
            }
        )
        if role == "original":
            if model is None:
                return lambda fn: fn
            return model
        kwargs["backend"] = backend if backend is not None else requested_backend
        kwargs["fullgraph"] = False
        if not keep_options:  # the emulated backend takes neither (TorchNeuron ignores modes)
            kwargs.pop("mode", None)
            kwargs.pop("options", None)
        if model is None:
            return lambda fn: original(fn, *args, **kwargs)
        return original(model, *args, **kwargs)

    torch.compile = compile  # type: ignore[assignment]


def patch_distributed() -> None:
    """``init_process_group("neuron"|"nccl")`` on gloo; DDP without ``device_ids`` (CPU modules)."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    original_init_pg = dist.init_process_group

    @functools.wraps(original_init_pg)
    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            backend = kwargs.pop("backend")
        if backend is None or str(backend).split(":")[0] in ("neuron", "nccl", "xla", "cuda:nccl"):
            STATE.note(f"init_process_group(backend={backend!r}) ran on gloo (emulation)")
            backend = "gloo"
        return original_init_pg(backend, *args, **kwargs)

    dist.init_process_group = init_process_group
    original_ddp_init = DistributedDataParallel.__init__

    @functools.wraps(original_ddp_init)
    def ddp_init(self: Any, module: Any, device_ids: Any = None, output_device: Any = None, *args: Any, **kwargs: Any) -> None:
        original_ddp_init(self, module, None, None, *args, **kwargs)

    DistributedDataParallel.__init__ = ddp_init


def disable_dropout() -> None:
    """Dropout as identity (semantic pass only): eager and compiled graphs draw masks differently."""
    import torch.nn.functional as F

    def identity(input: Any, *args: Any, **kwargs: Any) -> Any:
        return input

    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
        setattr(F, name, identity)
    sdpa = F.scaled_dot_product_attention

    def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0, *rest: Any, **kwargs: Any) -> Any:
        return sdpa(query, key, value, attn_mask, 0.0, *rest, **kwargs)

    F.scaled_dot_product_attention = scaled_dot_product_attention


_CUDA_ZERO = (
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_cached", "max_memory_cached",
)
_CUDA_NOOP = (
    "synchronize", "empty_cache", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
    "reset_max_memory_allocated", "set_device", "ipc_collect", "init", "set_per_process_memory_fraction",
    "set_sync_debug_mode",
)


def emulate_cuda_namespace() -> None:
    """An original's ``torch.cuda.*`` answers as if one GPU were there (all of it on the CPU)."""
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.is_initialized = lambda: True
    cuda.is_bf16_supported = lambda *a, **k: True
    cuda.get_device_name = lambda *a, **k: "porter emulated CUDA (CPU)"
    cuda.get_device_capability = lambda *a, **k: (8, 0)
    cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(
        name="porter emulated CUDA (CPU)", total_memory=24 * 2**30, major=8, minor=0, multi_processor_count=1
    )
    # CPU generator only (torch.manual_seed itself calls torch.cuda.manual_seed_all).
    cuda.manual_seed = cuda.manual_seed_all = lambda seed: torch.default_generator.manual_seed(int(seed))
    cuda.seed = cuda.seed_all = lambda: torch.default_generator.seed()
    cuda.initial_seed = lambda: torch.initial_seed()
    cuda.get_rng_state = lambda *a, **k: torch.get_rng_state()
    cuda.set_rng_state = lambda state, *a, **k: torch.set_rng_state(state)
    cuda.get_rng_state_all = lambda: [torch.get_rng_state()]
    cuda.set_rng_state_all = lambda states: torch.set_rng_state(states[0])
    cuda.mem_get_info = lambda *a, **k: (24 * 2**30, 24 * 2**30)
    cuda.memory_stats = lambda *a, **k: {}
    cuda.memory_summary = lambda *a, **k: "porter emulated CUDA (CPU)"
    cuda.Event = neuron_module.Event
    cuda.Stream = neuron_module.Stream
    cuda.current_stream = cuda.default_stream = neuron_module.current_stream
    cuda.stream = neuron_module.stream
    cuda.device = neuron_module.device
    for name in _CUDA_ZERO:
        setattr(cuda, name, lambda *a, **k: 0)
    for name in _CUDA_NOOP:
        setattr(cuda, name, lambda *a, **k: None)
    nvtx = getattr(cuda, "nvtx", None)
    if nvtx is not None:
        for name in ("range_push", "range_pop", "mark"):
            setattr(nvtx, name, lambda *a, **k: None)
        nvtx.range = _null_context


class _null_context:
    def __init__(self, *a: Any, **k: Any) -> None:
        pass

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def record_cuda_namespace() -> None:
    """A port's remaining ``torch.cuda.*`` calls are findings; they behave as on Trainium
    (no CUDA: ``is_available()`` False, counts zero) but never stop the run."""
    cuda = torch.cuda

    def recorder(name: str, result: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            _record_cuda(f"torch.cuda.{name}", skip_torch_callers=True)
            return result(*args, **kwargs)

        return call

    cuda.is_available = recorder("is_available", lambda: False)
    cuda.device_count = recorder("device_count", lambda: 0)
    for name in ("manual_seed", "manual_seed_all"):
        setattr(cuda, name, recorder(name, lambda seed: None))
    for name in _CUDA_ZERO:
        setattr(cuda, name, recorder(name, lambda *a, **k: 0))
    for name in _CUDA_NOOP:
        setattr(cuda, name, recorder(name, lambda *a, **k: None))
    cuda.get_device_name = recorder("get_device_name", lambda *a, **k: "none")
    cuda.is_bf16_supported = recorder("is_bf16_supported", lambda *a, **k: False)
