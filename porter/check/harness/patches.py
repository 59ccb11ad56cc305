"""Process-level patches the harness applies before the script runs.

Each function here changes one torch entry point in the subprocess only, for one reason:
- autocast on an emulated device runs as CPU autocast (or is switched off for the fp32 parity pass);
- GradScaler on an emulated device scales on the CPU, and remembers the unscaled loss;
- ``torch.compile`` is recorded, then routed to the emulated ``neuron`` backend (port) or run eagerly
  (original: it is the semantic baseline, and Inductor on a CPU-only torch asserts on CUDA RNG);
- a ``neuron`` collective backend (gloo underneath) is registered for the ``neuron`` device type;
  ``nccl`` runs on gloo; ``device_id``/``device_ids`` are checked and dropped; device meshes of the
  emulated device are CPU meshes (FSDP2, DTensor);
- ``torch.accelerator`` answers for the emulated device; ``Module.to(0)`` names it in an original;
- ``torch.Generator(device)`` of an emulated device is a CPU generator (the tensors it draws for run there);
- ``torch.cuda.*`` is emulated for an original, and recorded as a finding in a port;
- dropout is an identity in the semantic pass (compiled graphs draw random numbers differently);
- optimizer state made by ``_init_group`` is on its parameter's emulated device (as ``zeros_like(p)`` is);
  an ``nn.Parameter`` is on its data's emulated device.
"""

from __future__ import annotations

import functools
import inspect
import os
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

from porter.check.harness import neuron_module
from porter.check.harness.state import STATE, user_location

# Typing: this module monkeypatches torch, replacing methods, classes and functions with emulations whose
# signatures differ from torch's stubs (and tagging tensors with attributes torch does not declare). The
# type system cannot express a replaced module member, so those assignments carry targeted ignores.


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
        if enabled:
            STATE.autocast_seen = True
        if device_type in foreign:
            _record_cuda(f"torch.autocast(device_type='{device_type}')")
        if device_type in emulated or device_type in foreign:
            dtype = torch.float16 if dtype is None else dtype
            device_type = "cpu"
        if disable:
            enabled = False
        original_init(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    cls.__init__ = __init__  # type: ignore[method-assign]


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
            scaled._porter_unscaled = outputs  # type: ignore[attr-defined]
        return scaled

    original_step = cls.step

    @functools.wraps(original_step)
    def step(self: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        # Neuron's fused AdamW ignores grad_scale/found_inf (neuron-torch-neuronx source, torch_neuronx/neuron.py): on the device the
        # update would be unscaled and never skipped; CPU's fused kernels honour them, so record it.
        if "neuron" in emulated and self.is_enabled() and getattr(optimizer, "defaults", {}).get("fused"):
            file, line = user_location()
            STATE.fused_scaler[(type(optimizer).__name__, file, line)] += 1
        return original_step(self, optimizer, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[method-assign]
    cls.scale = scale  # type: ignore[method-assign]
    cls.step = step  # type: ignore[method-assign]


def fallback_enabled(options: Any) -> bool:
    """Did the user let a failing graph fall back to eager? TorchNeuron raises by default
    (``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` defaults to true; the ``fallback_execution``
    compile option overrides it: neuron-torch-neuronx source, torch_neuronx/neuron.py; AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile))."""
    if isinstance(options, dict) and "fallback_execution" in options:
        return bool(options["fallback_execution"])
    return os.environ.get("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "1").lower() in ("0", "false")


def host_module(model: Any) -> bool:
    """True for a module (or a module's bound method) whose parameters and buffers are all on the
    CPU here: a region that runs on the host CPU of a Trainium machine, where Inductor is a
    working backend (torchrl's collectors compile their CPU copy of the policy so)."""
    from porter.check.harness.device_mode import dev_of

    owner = model if isinstance(model, torch.nn.Module) else getattr(model, "__self__", None)
    if not isinstance(owner, torch.nn.Module):
        return False
    tensors = [*owner.parameters(), *owner.buffers()]
    return bool(tensors) and all(dev_of(t) != "neuron" for t in tensors)


def _code_span(model: Any) -> list[Any] | None:
    """[file, first line, last line] of the function (or module's forward) handed to torch.compile."""
    function = model.forward if isinstance(model, torch.nn.Module) else model
    function = getattr(function, "__func__", function)
    try:  # a decorated function's own code, not its decorator's wrapper (shared by every function it wraps)
        function = inspect.unwrap(function)
    except ValueError:  # a cycle of __wrapped__
        return None
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    lines = [line for _, _, line in code.co_lines() if line is not None]
    return [code.co_filename, code.co_firstlineno, max(lines, default=code.co_firstlineno)]


def patch_compile(role: str, backend: Callable[..., Any] | None, keep_options: bool = False) -> None:
    """Record every ``torch.compile`` call. Port, emulated: the emulated neuron backend, with
    ``fullgraph`` as the user asked (a graph break under ``fullgraph=True`` raises, as on the
    device) and a graph that does not lower raising unless fallback is enabled. Device target:
    the user's backend; graph breaks are reported rather than raised. Original: run eagerly."""
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
                "host_module": role == "port" and host_module(model),
                # the emulated backend honours fullgraph (a break raises); the device target reports breaks instead
                "fullgraph_reported": keep_options,
                # the step it was called at and the code it compiles: a sync in that code before this
                # step ran in the script's eager warm-up calls (torchrl's compile_with_warmup)
                "step": STATE.steps,
                "code": _code_span(model),
            }
        )
        if role == "original":
            if model is None:
                return lambda fn: fn
            return model
        if backend is not None and hasattr(backend, "with_fallback"):
            kwargs["backend"] = backend.with_fallback(fallback_enabled(kwargs.get("options")))
        else:
            kwargs["backend"] = backend if backend is not None else requested_backend
        if keep_options:
            kwargs["fullgraph"] = False
        if not keep_options:  # the emulated backend takes neither (TorchNeuron ignores modes)
            kwargs.pop("mode", None)
            kwargs.pop("options", None)
        if model is None:
            return lambda fn: _first_call_tracked(fn, original(fn, *args, **kwargs))
        return _first_call_tracked(model, original(model, *args, **kwargs))

    torch.compile = compile  # type: ignore[assignment]


def _first_call_tracked(fn: Any, compiled: Any) -> Any:
    """``compiled`` (torch.compile of the function ``fn``), noted in STATE.compiled_calls while it runs,
    with whether it is its first call. Two compiled functions that call one frame (torchrl's
    ``update_qloss`` and ``update_all`` both step one optimizer) each compile it: Dynamo's guards on the
    frame name the backend object of the torch.compile call (``BACKEND_MATCH``) and the state the
    caller leaves (which grads are None, how much optimizer state exists). The second function's
    first call recompiles the shared frame, and the state it builds makes the first function's next
    call compile it once more; that is each caller's own compile, not instability (analyze.py's
    ``_shared_frame_findings``). Modules are returned as they are (an ``OptimizedModule``'s type is
    the script's)."""
    if isinstance(fn, torch.nn.Module) or not callable(compiled) or isinstance(compiled, torch.nn.Module):
        return compiled
    name = str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__)
    calls = [0]

    @functools.wraps(compiled)
    def tracked(*args: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_compiling():  # called inside another compiled region: Dynamo traces it
            return compiled(*args, **kwargs)
        calls[0] += 1
        STATE.compiled_calls.append((name, calls[0] == 1))
        try:
            return compiled(*args, **kwargs)
        finally:
            STATE.compiled_calls.pop()

    return tracked


RUNTIME_BEFORE_INIT = "Neuron runtime should not be initialized before the init_process_group."
MORE_THAN_ONE_CORE = "Attempted to have more than one device per process in distributed setup"


def _visible_cores(value: str) -> int:
    """How many cores ``NEURON_RT_VISIBLE_CORES`` names ("0", "0,1", "0-3")."""
    count = 0
    for part in value.split(","):
        part = part.strip()
        if "-" in part:
            low, _, high = part.partition("-")
            count += int(high) - int(low) + 1 if low.isdigit() and high.isdigit() else 1
        elif part:
            count += 1
    return count


def _neuron_process_group(store: Any, rank: int, size: int, timeout: Any) -> Any:
    """The emulated ``neuron`` collective backend: gloo (the tensors live on the CPU).

    Checks what TorchNeuron's own backend setup asserts (neuron-torch-neuronx source, torch_neuronx/neuron.py; torch-neuronx source, python_ops/torch_mlir/ops/optimizer.py): the runtime must
    not have started (a tensor placed on the device) before ``init_process_group``, and each rank
    of a distributed job sees one core.
    """
    import os

    from torch.distributed import ProcessGroupGloo

    if size > 1:
        if STATE.reached_device:
            raise AssertionError(RUNTIME_BEFORE_INIT)
        cores = os.environ.get("NEURON_RT_VISIBLE_CORES")
        if cores and _visible_cores(cores) > 1:
            raise AssertionError(f"{MORE_THAN_ONE_CORE} (NEURON_RT_VISIBLE_CORES={cores})")
    STATE.note("the `neuron` collective backend ran on gloo (emulation)")
    return ProcessGroupGloo(store, rank, size, timeout)


def _backend_name(backend: Any) -> str:
    return str(backend).lower() if backend is not None else ""


def patch_distributed(role: str = "port") -> None:
    """Collectives of the emulated devices on gloo.

    Port: a ``neuron`` backend is registered for the ``neuron`` device type, as torch-neuronx
    registers its own, so ``get_default_backend_for_device``, ``init_process_group("neuron")``,
    ``init_process_group(device_id=...)``, DDP, FSDP2 and DTensor find it. A ``nccl`` left in a
    port is a finding (and runs on gloo). Original: ``nccl`` runs on gloo. Both: DDP drops
    ``device_ids`` and ``init_process_group`` drops ``device_id`` (the modules are CPU modules to
    C++), after checking the id names this process's device.
    """
    import os

    import torch.distributed as dist

    if not dist.is_available():
        return
    from torch.nn.parallel import DistributedDataParallel

    if role != "original" and "neuron" not in dist.Backend.backend_list:
        dist.Backend.register_backend("neuron", _neuron_process_group, devices=["neuron", "cpu"])
    original_init_pg = dist.init_process_group

    @functools.wraps(original_init_pg)
    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            backend = kwargs.pop("backend")
        device_id = kwargs.pop("device_id", None)
        if device_id is not None:
            device = torch.device("cuda" if role == "original" else "neuron", device_id) if isinstance(device_id, int) else torch.device(device_id)
            local = int(os.environ.get("LOCAL_RANK", kwargs.get("rank", 0) or 0))
            if device.type != "cpu" and device.index is not None and device.index != local:
                raise ValueError(f"device_id {device} is not this process's device ({device.type}:{local}): one device per rank")
            if backend is None:
                backend = "nccl" if device.type == "cuda" else dist.Backend.default_device_backend_map.get(device.type)
            STATE.note(f"init_process_group(device_id={device}) bound no device (emulation: the tensors live on the CPU)")
        name = _backend_name(backend)
        if "nccl" in name or "xla" in name:
            if role != "original":
                file, line = user_location()
                STATE.cuda_uses[(f"init_process_group(backend={backend!r})", file, line)] += 1
            STATE.note(f"init_process_group(backend={backend!r}) ran on gloo (emulation)")
            backend = "gloo"
        return original_init_pg(backend, *args, **kwargs)

    dist.init_process_group = init_process_group
    original_ddp_init = DistributedDataParallel.__init__

    @functools.wraps(original_ddp_init)
    def ddp_init(self: Any, module: Any, device_ids: Any = None, output_device: Any = None, *args: Any, **kwargs: Any) -> None:
        original_ddp_init(self, module, None, None, *args, **kwargs)

    DistributedDataParallel.__init__ = ddp_init  # type: ignore[method-assign]


def patch_device_mesh(device_type: str) -> None:
    """Device meshes of the emulated device are CPU meshes (gloo), and FSDP2's parameters,
    made by FSDP2 itself, are tagged as living on the emulated device.

    FSDP2 allocates its all-gather buffers in C++ on the mesh's device, which a CPU-only torch
    cannot do for ``neuron``; the same collectives on a CPU mesh are what the tensors (CPU ones
    underneath) need. DTensor and FSDP2 logic above the allocation is unchanged.
    """
    try:
        from torch.distributed import device_mesh
        from torch.distributed.fsdp._fully_shard import _fsdp_param
    except ImportError:  # a torch without distributed: nothing to patch
        return
    from porter.check.harness.device_mode import tag

    mesh_init = device_mesh.DeviceMesh.__init__

    @functools.wraps(mesh_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given = kwargs["device_type"] if "device_type" in kwargs else args[0]
        if given == device_type:
            STATE.note(f"DeviceMesh('{device_type}') ran as a CPU mesh on gloo (emulation)")
            if "device_type" in kwargs:
                kwargs["device_type"] = "cpu"
            else:
                args = ("cpu", *args[1:])
        mesh_init(self, *args, **kwargs)

    device_mesh.DeviceMesh.__init__ = __init__  # type: ignore[method-assign]
    cls = _fsdp_param.FSDPParam

    def tagging(name: str, attribute: str) -> None:
        original = getattr(cls, name)

        @functools.wraps(original)
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(self, *args, **kwargs)
            param = getattr(self, attribute, None)
            if isinstance(param, torch.Tensor):
                tag(param, device_type)
                local = getattr(param, "_local_tensor", None)
                if isinstance(local, torch.Tensor):
                    tag(local, device_type)
            return out

        setattr(cls, name, method)

    tagging("_init_sharded_param", "sharded_param")
    tagging("reset_sharded_param", "sharded_param")
    tagging("init_unsharded_param", "_unsharded_param")


def _torch_asks() -> bool:
    """True when the function asking (two frames up) is torch's own code."""
    import sys

    name = sys._getframe(2).f_globals.get("__name__", "")
    return name == "torch" or name.startswith("torch.")


def patch_accelerator(device_type: str) -> None:
    """``torch.accelerator`` answers for the emulated device type.

    A CPU-only torch has no C++ device guard for either device, so the index calls go to the
    device module (``torch.neuron`` or the emulated ``torch.cuda``) and synchronize is a no-op
    (every op has already run on the CPU). Memory calls stay as they are: on Neuron they assert
    (neuron-torch-neuronx source, torch_neuronx/neuron.py). ``is_available`` of the port stays the device module's (which tells
    torch's own callers False: see neuron_module).
    """
    acc = torch.accelerator
    module = lambda: torch.get_device_module(device_type)  # noqa: E731 - resolved when called
    device = torch.device(device_type)

    def current_accelerator(check_available: bool = False) -> Any:
        return device

    def _index(value: Any) -> int:
        if value is None:
            return int(module().current_device())
        if isinstance(value, int):
            return value
        dev = torch.device(value)
        if dev.type != device_type:
            raise ValueError(f"{dev.type} doesn't match the current accelerator {device}.")
        return dev.index if dev.index is not None else int(module().current_device())

    def set_device_index(value: Any, /) -> None:
        index = _index(value)
        if index >= 0:
            module().set_device(index)

    if device_type == "cuda":
        # A CPU-only torch knows no CUDA (it does know the renamed PrivateUse1). The script and its
        # libraries are told CUDA is there; torch's own callers (the optimizers' graph-capture
        # check, ...) keep the CPU-only answers, which the emulated tensors need.
        real_current, real_available = acc.current_accelerator, acc.is_available

        def user_current(check_available: bool = False) -> Any:
            return real_current(check_available) if _torch_asks() else current_accelerator()

        acc.current_accelerator = user_current
        acc.is_available = lambda: real_available() if _torch_asks() else True
    acc.device_count = lambda: int(module().device_count())
    acc.current_device_index = lambda: int(module().current_device())
    acc.current_device_idx = acc.current_device_index
    acc.set_device_index = set_device_index
    acc.set_device_idx = set_device_index
    acc.synchronize = lambda device=None, /: None


# torch.nn.functional's dropouts (the semantic pass turns them off; an original's as-written run notes them)
_DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")


def disable_dropout() -> None:
    """Dropout as identity (semantic pass only): eager and compiled graphs draw masks differently."""
    import torch.nn.functional as F

    def identity(input: Any, *args: Any, **kwargs: Any) -> Any:
        return input

    for name in _DROPOUTS:
        setattr(F, name, identity)
    sdpa = F.scaled_dot_product_attention

    def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0, *rest: Any, **kwargs: Any) -> Any:
        return sdpa(query, key, value, attn_mask, 0.0, *rest, **kwargs)

    F.scaled_dot_product_attention = scaled_dot_product_attention
    # RNN/LSTM/GRU apply dropout between layers inside the fused kernel, from their float
    # ``dropout`` attribute (read by forward on every call), not through F.dropout: the attribute
    # reads 0.0; what the script set is kept aside, in ``_porter_dropout``.
    from torch.nn.modules.rnn import RNNBase

    def kept(self: Any) -> float:
        return 0.0

    def keep(self: Any, value: float) -> None:
        self.__dict__["_porter_dropout"] = value

    RNNBase.dropout = property(kept, keep)  # type: ignore[assignment]


def record_dropout() -> None:
    """Note a dropout that draws a mask (p > 0, training) through the paths ``disable_dropout`` turns
    off (the functional dropouts, scaled_dot_product_attention's dropout_p, an RNN's ``dropout``):
    an original run as written that applied none ran the same program as its semantic run. For an
    original only: it runs eagerly (a port's compiled graphs would trace the note)."""
    import torch.nn.functional as F
    from torch.nn.modules.rnn import RNNBase

    def recorder(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def run(input: Any, *args: Any, **kwargs: Any) -> Any:
            p = kwargs.get("p", args[0] if args else 0.5)
            training = kwargs.get("training", args[1] if len(args) > 1 else True)
            if training and p:
                STATE.dropout_seen = True
            return original(input, *args, **kwargs)

        return run

    for name in _DROPOUTS:
        setattr(F, name, recorder(getattr(F, name)))
    sdpa = F.scaled_dot_product_attention

    @functools.wraps(sdpa)
    def scaled_dot_product_attention(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("dropout_p", args[4] if len(args) > 4 else 0.0):
            STATE.dropout_seen = True
        return sdpa(*args, **kwargs)

    F.scaled_dot_product_attention = scaled_dot_product_attention

    def read(self: Any) -> float:
        # an RNN unpickled from an unpatched process keeps its value under the attribute's own name
        value = self.__dict__.get("_porter_dropout", self.__dict__.get("dropout", 0.0))
        if value and self.training:
            STATE.dropout_seen = True
        return value

    def write(self: Any, value: float) -> None:
        self.__dict__["_porter_dropout"] = value

    RNNBase.dropout = property(read, write)  # type: ignore[assignment]


_CUDA_ZERO = (
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_cached", "max_memory_cached",
)
_CUDA_NOOP = (
    "synchronize", "empty_cache", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
    "reset_max_memory_allocated", "set_device", "ipc_collect", "init", "set_per_process_memory_fraction",
    "set_sync_debug_mode",
)


_cuda_current = [0]


_GENERATOR = torch._C.Generator


class _AnyGenerator(type(_GENERATOR)):  # type: ignore[misc]
    """``isinstance(g, torch.Generator)`` stays true for every generator, torch's own defaults too."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _GENERATOR)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return issubclass(sub, _GENERATOR)


def patch_generator(emulated: tuple[str, ...], foreign: tuple[str, ...] = ()) -> None:
    """``torch.Generator(device)`` for an emulated device type (or an integer, which names the
    accelerator) makes a CPU generator: the emulated device's tensors are CPU tensors, so the ops
    a generator is handed to run on the CPU. Unpatched, a CPU-only torch has no CUDA generator
    ("Cannot get CUDA generator without ATen_cuda library": torchtune's PPO recipe,
    ``torch.Generator(self._device)``) and the Python-registered PrivateUse1 device none either
    ("implement getNewGenerator"). On Trainium torch-neuronx registers a Philox generator per
    device (its ``NeuronHooksInterface::getNewGenerator``), so the port's call is valid there.
    A ``foreign`` device type (CUDA in a port) gets a CPU generator too, and is recorded as a
    finding at the caller's line, as a CUDA placement in a port is."""

    def _emulated(device: Any) -> bool:
        if isinstance(device, int) and not isinstance(device, bool):
            return True
        kind = device.type if isinstance(device, torch.device) else str(device).split(":", 1)[0]
        if kind in foreign:
            file, line = user_location()
            STATE.cuda_uses[(f"torch.Generator on '{kind}'", file, line)] += 1
            return True
        return kind in emulated

    class Generator(_GENERATOR, metaclass=_AnyGenerator):  # type: ignore[misc]
        def __new__(cls, device: Any = "cpu") -> Any:
            return _GENERATOR.__new__(cls, "cpu" if _emulated(device) else device)  # type: ignore[call-arg]

        def __init__(self, device: Any = "cpu") -> None:
            pass

    Generator.__module__, Generator.__qualname__ = "torch", "Generator"
    torch.Generator = Generator  # type: ignore[misc]


def _cuda_count() -> int:
    # one GPU per local rank, as under torchrun on a GPU host (--nproc sets LOCAL_WORLD_SIZE)
    return int(os.environ.get("LOCAL_WORLD_SIZE", "1"))


def _cuda_set_device(device: Any) -> None:
    index = device if isinstance(device, int) else torch.device(device).index
    index = 0 if index is None else index
    if index < 0:
        return
    if index >= _cuda_count():
        raise RuntimeError("CUDA error: invalid device ordinal (porter: emulated CUDA has "
                           f"{_cuda_count()} device(s), LOCAL_WORLD_SIZE)")
    _cuda_current[0] = index


def emulate_cuda_namespace() -> None:
    """An original's ``torch.cuda.*`` answers as if one GPU per local rank were there (all of it on
    the CPU); integer devices (``model.to(0)``) name CUDA devices, as on a CUDA build."""
    cuda = torch.cuda
    _cuda_current[0] = int(os.environ.get("LOCAL_RANK", "0"))
    cuda.is_available = lambda: True
    cuda.device_count = _cuda_count
    cuda.current_device = lambda: _cuda_current[0]
    cuda.is_initialized = lambda: True
    cuda.is_bf16_supported = lambda *a, **k: True
    cuda.get_device_name = lambda *a, **k: "porter emulated CUDA (CPU)"
    cuda.get_device_capability = lambda *a, **k: (8, 0)
    cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(  # type: ignore[assignment]
        name="porter emulated CUDA (CPU)", total_memory=24 * 2**30, major=8, minor=0, multi_processor_count=1
    )
    # CPU generator only (torch.manual_seed itself calls torch.cuda.manual_seed_all).
    cuda.manual_seed = cuda.manual_seed_all = lambda seed: torch.default_generator.manual_seed(int(seed))  # type: ignore[assignment]
    cuda.seed = cuda.seed_all = lambda: torch.default_generator.seed()  # type: ignore[assignment]
    cuda.initial_seed = lambda: torch.initial_seed()
    cuda.get_rng_state = lambda *a, **k: torch.get_rng_state()
    cuda.set_rng_state = lambda state, *a, **k: torch.set_rng_state(state)
    cuda.get_rng_state_all = lambda: [torch.get_rng_state()]
    cuda.set_rng_state_all = lambda states: torch.set_rng_state(states[0])  # type: ignore[assignment, index]
    cuda.mem_get_info = lambda *a, **k: (24 * 2**30, 24 * 2**30)
    cuda.memory_stats = lambda *a, **k: {}
    cuda.memory_summary = lambda *a, **k: "porter emulated CUDA (CPU)"
    cuda.Event = neuron_module.Event  # type: ignore[misc, assignment]
    cuda.Stream = neuron_module.Stream  # type: ignore[misc, assignment]
    cuda.current_stream = cuda.default_stream = neuron_module.current_stream  # type: ignore[assignment]
    cuda.stream = neuron_module.stream  # type: ignore[assignment]
    cuda.device = neuron_module.device  # type: ignore[misc, assignment]
    for name in _CUDA_ZERO:
        setattr(cuda, name, lambda *a, **k: 0)
    for name in _CUDA_NOOP:
        setattr(cuda, name, lambda *a, **k: None)
    cuda.set_device = _cuda_set_device
    # a CUDA build has NCCL (the original's "nccl" process groups run on gloo here); libraries gate
    # bf16 on it (torchtune's verify_bf16_support: is_nccl_available() and nccl.version() >= (2, 10))
    torch.distributed.is_nccl_available = lambda: True
    cuda.nccl.version = lambda: (2, 21, 5)  # type: ignore[attr-defined]
    _integer_module_devices("cuda")
    nvtx = getattr(cuda, "nvtx", None)
    if nvtx is not None:
        for name in ("range_push", "range_pop", "mark"):
            setattr(nvtx, name, lambda *a, **k: None)
        nvtx.range = _null_context


def _integer_module_devices(device_type: str) -> None:
    """``Module.to(0)`` / ``Module.to(device=0)``: an ordinal names the accelerator. A CPU-only
    torch has none to name, so the ordinal is spelled out before ``Module.to`` parses it."""
    original = torch.nn.Module.to

    def _spell(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return torch.device(device_type, value)
        return value

    @functools.wraps(original)
    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args:
            args = (_spell(args[0]), *args[1:])
        if "device" in kwargs:
            kwargs["device"] = _spell(kwargs["device"])
        return original(self, *args, **kwargs)

    torch.nn.Module.to = to  # type: ignore[method-assign]


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


def patch_vmap() -> None:
    """``torch.vmap``/``torch.func.vmap`` outputs on the device their inputs are on.

    The emulated device is a tag on CPU tensors, set by the mode; a vmapped function's outputs
    are unwrapped from its batched tensors in C++ and came back untagged, so their first use
    with a device tensor read as CPU/device mixing (torchrl's MultiAgentMLP runs its agents'
    networks under vmap). On a device, vmap's outputs are where its inputs are.
    """
    from torch.utils._pytree import tree_leaves

    from porter.check.harness.device_mode import dev_of, tag

    def _tensors(tree: Any) -> Iterator[torch.Tensor]:
        # a TensorDict is a pytree leaf where a script excludes it from pytree (torchrl's sac scripts:
        # tensordict.nn.functional_modules._exclude_td_from_pytree().set()): its own tensors count
        for leaf in tree_leaves(tree):
            if isinstance(leaf, torch.Tensor):
                yield leaf
            elif type(leaf).__module__.startswith("tensordict") and callable(getattr(leaf, "values", None)):
                yield from (t for t in leaf.values(True, True) if isinstance(t, torch.Tensor))

    original = torch.vmap

    def vmap(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
        mapped = original(func, *args, **kwargs)

        @functools.wraps(mapped)
        def run(*inputs: Any, **named: Any) -> Any:
            out = mapped(*inputs, **named)
            if torch.compiler.is_compiling():
                return out
            dev = next((d for t in _tensors((inputs, named)) if (d := dev_of(t)) is not None), None)
            if dev is not None:
                for t in _tensors(out):
                    if dev_of(t) is None:
                        tag(t, dev)
            return out

        return run

    torch.vmap = vmap  # type: ignore[assignment]
    torch.func.vmap = vmap  # type: ignore[assignment]


def patch_optimizer_state() -> None:
    """The state an optimizer's ``_init_group`` makes is on its parameter's emulated device.

    Under ``torch.compile`` Dynamo runs ``_init_group`` itself, eagerly, while it traces the step
    (torch/_dynamo/variables/optimizer.py, ``OptimizerVariable.call_method``), outside the device
    mode: ``exp_avg = zeros_like(p)`` came back an untagged CPU tensor, and a fused AdamW step read
    as CPU/neuron mixing. On a device, ``zeros_like(p)`` is on ``p``'s device; so is ``step`` when
    the group is fused or capturable (otherwise torch keeps it a CPU scalar on purpose, torch/optim/adam.py).
    """
    from porter.check.harness.device_mode import dev_of, tag

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def _init_group(self: torch.optim.Optimizer, group: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            out = original(self, group, *args, **kwargs)
            on_device = bool(group.get("fused") or group.get("capturable"))
            for param in group["params"]:
                dev = dev_of(param)
                if dev is None:
                    continue
                for name, value in self.state.get(param, {}).items():
                    if (isinstance(value, torch.Tensor) and dev_of(value) is None and value.device == param.device
                            and (name != "step" or on_device)):
                        tag(value, dev)
            return out

        return _init_group

    for cls in vars(torch.optim).values():
        if isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer) and "_init_group" in vars(cls):
            cls._init_group = wrap(cls._init_group)  # type: ignore[attr-defined]


def patch_parameters() -> None:
    """``nn.Parameter(data)`` is on ``data``'s emulated device.

    ``Parameter.__new__`` makes a new tensor object (``Tensor._make_subclass``) in C++, which drops
    the emulated device's tag: a module built on the device (``with torch.device("neuron"):`` as
    torchtune's recipes build their model, or ``nn.Linear(..., device=...)``) had CPU weights and
    its first forward read as CPU/neuron mixing. On a device, the parameter is its data's storage.
    """
    from porter.check.harness.device_mode import dev_of, tag

    original = torch.nn.Parameter.__new__

    def __new__(cls: type, data: torch.Tensor | None = None, requires_grad: bool = True) -> Any:
        out: Any = original(cls, data, requires_grad)
        dev = dev_of(data) if isinstance(data, torch.Tensor) else None
        if dev is not None and dev_of(out) is None:
            tag(out, dev)
        return out

    torch.nn.Parameter.__new__ = staticmethod(__new__)  # type: ignore[method-assign,assignment]


def patch_threads(mode: Any) -> None:
    """Threads the script starts run under the run's mode too.

    A TorchFunctionMode is per thread: a thread the script (or its library: torchrl's async
    collectors) starts ran with no mode at all, so its ``device="neuron"`` reached the real,
    kernel-less PrivateUse1 backend, its tensors were never tagged and its syncs never counted.
    ``Thread._bootstrap_inner`` runs every thread's ``run`` (a subclass's own too).
    """
    import threading

    from torch.overrides import _get_current_function_mode_stack

    bootstrap = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def _bootstrap_inner(self: threading.Thread) -> None:
        if mode in _get_current_function_mode_stack():
            bootstrap(self)
            return
        with mode:
            bootstrap(self)

    threading.Thread._bootstrap_inner = _bootstrap_inner  # type: ignore[attr-defined]


def patch_lazy_parameters() -> None:
    """A lazy module's parameters materialize on the emulated device they were created on.

    ``UninitializedParameter.materialize`` takes its device from ``self.data.device``: ``.data`` is
    a new tensor object made in C++, untagged, so the device read as the CPU and ``nn.LazyLinear(n,
    device="neuron")`` (torchrl's MLP builds its layers so) got host weights that mixed with the
    device input at the first forward. The tag also had no gradient hook (a lazy tensor takes none):
    it is set again once the parameter is a real one.
    """
    from torch.nn.parameter import UninitializedTensorMixin  # type: ignore[attr-defined]

    from porter.check.harness.device_mode import dev_of, tag

    original = UninitializedTensorMixin.materialize

    def materialize(self: Any, shape: Any, device: Any = None, dtype: Any = None) -> None:
        dev = dev_of(self)
        original(self, shape, device=dev if device is None and dev is not None else device, dtype=dtype)
        dev = dev_of(self)
        if dev is not None:
            tag(self, dev)  # now a Parameter: its gradient hook too

    UninitializedTensorMixin.materialize = materialize  # type: ignore[method-assign]

    # Made by Tensor._make_subclass in C++, which drops the tag of the empty tensor placed on
    # `device`: the new object is tagged where an empty tensor on that device is (the mode decides).
    for lazy_cls in (torch.nn.parameter.UninitializedParameter, torch.nn.parameter.UninitializedBuffer):
        def make(new: Callable[..., Any]) -> Callable[..., Any]:
            def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
                out = new(cls, *args, **kwargs)
                device = kwargs.get("device", args[1] if len(args) > 1 else None)
                if device is not None and dev_of(out) is None:
                    dev = dev_of(torch.empty(0, device=device))
                    if dev is not None:
                        tag(out, dev)
                return out

            return staticmethod(__new__)

        lazy_cls.__new__ = make(lazy_cls.__new__)  # type: ignore[assignment,method-assign]
