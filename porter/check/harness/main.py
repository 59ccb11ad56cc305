"""Entry point of the check's subprocess: ``python -m porter.check.harness CONFIG.json``.

Sets up the target (emulated neuron device for a port, emulated CUDA for an original, or observation
only on a real Neuron device), seeds every RNG and pins the OS entropy (harness/entropy.py), runs the script as ``__main__`` with its own argv and
working directory, stops it after ``steps`` steps (optimizer steps; backward() calls when the script
makes no optimizer), and writes the raw record as JSON.
"""

from __future__ import annotations

import json
import os
import random
import re
import runpy
import sys
import time
import traceback
from typing import Any

from porter.check.harness.state import STATE, StopRun, dump, optimizer_stepped

STANDIN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "standin")


def _seed(seed: int) -> None:
    import torch

    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    torch.manual_seed(seed)


def _step_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
    optimizer_stepped(id(optimizer))


def _nudge_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
    """The sensitivity run (orchestrate._sensitivity): every floating parameter the step updated
    moves one ulp towards +inf, the size of one rounding a compiled graph may do differently."""
    import torch

    with torch.no_grad():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if isinstance(param, torch.Tensor) and param.is_floating_point():
                    param.copy_(torch.nextafter(param, torch.full_like(param, float("inf"))))


def _count_optimizers() -> None:
    """Remember that the script made an optimizer: steps are then its ``step()`` calls."""
    import functools

    import torch

    original = torch.optim.Optimizer.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        STATE.optimizers_made += 1
        original(self, *args, **kwargs)

    torch.optim.Optimizer.__init__ = __init__  # type: ignore[method-assign]


def _setup_emulated_port(config: dict[str, Any]) -> Any:
    import torch

    from porter.check.harness import checkpoint_meta, neuron_module, patches
    from porter.check.harness.backend import NeuronEmulatedBackend
    from porter.check.harness.device_mode import DeviceMode

    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", neuron_module.build())
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=False)
    _register_hooks()
    backend = NeuronEmulatedBackend(dump_dir=config.get("dump_dir"), bisect=bool(config.get("bisect")))
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    _BACKENDS.pop("neuron", None)
    register_backend(compiler_fn=backend, name="neuron")
    semantic = bool(config.get("semantic"))
    patches.patch_autocast(emulated=("neuron",), foreign=("cuda",), disable=semantic)
    patches.patch_grad_scaler(emulated=("neuron",), foreign=("cuda",))
    patches.patch_compile("port", backend)
    patches.patch_distributed("port")
    patches.patch_device_mesh("neuron")
    patches.patch_accelerator("neuron")
    patches.patch_generator(("neuron",), foreign=("cuda",))
    patches.patch_vmap()
    patches.patch_optimizer_state()
    patches.patch_parameters()
    checkpoint_meta.patch_checkpoint_metadata()
    patches.patch_lazy_parameters()
    patches.record_cuda_namespace()
    if semantic:
        patches.disable_dropout()
    sys.path.insert(0, STANDIN_DIR)  # the stand-in torch_neuronx, for this script only
    return DeviceMode("neuron", foreign=("cuda",))


def _register_hooks() -> None:
    """PrivateUse1 hooks and device guard from Python, as torch's Python-backend registration
    does (``torch.utils.backend_registration._setup_privateuseone_for_python_backend``): torch's
    own ``_get_accelerator()`` (FSDP2's default mesh, DTensor) asks for them."""
    import torch
    from torch.utils.backend_registration import _DummyDeviceGuard, _DummyPrivateUse1Hook

    torch._C._acc.register_python_privateuseone_hook(_DummyPrivateUse1Hook())
    torch._C._acc.register_python_privateuseone_device_guard(_DummyDeviceGuard())


def _setup_emulated_original(config: dict[str, Any]) -> Any:
    from porter.check.harness import checkpoint_meta, patches
    from porter.check.harness.device_mode import DeviceMode

    semantic = bool(config.get("semantic"))
    patches.emulate_cuda_namespace()
    patches.patch_autocast(emulated=("cuda",), foreign=(), disable=semantic)
    patches.patch_grad_scaler(emulated=("cuda",), foreign=())
    patches.patch_compile("original", None)
    patches.patch_distributed("original")
    patches.patch_device_mesh("cuda")
    patches.patch_accelerator("cuda")
    patches.patch_generator(("cuda",))
    patches.patch_vmap()
    patches.patch_optimizer_state()
    patches.patch_parameters()
    checkpoint_meta.patch_checkpoint_metadata()
    patches.patch_lazy_parameters()
    if semantic:
        patches.disable_dropout()
    else:
        patches.record_dropout()
    return DeviceMode("cuda")


def _setup_plain(config: dict[str, Any]) -> Any:
    """Bench baseline: the port runs eagerly on the CPU with no collectors and no compile."""
    import torch

    from porter.check.harness import neuron_module, patches
    from porter.check.harness.device_mode import MapOnlyMode

    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", neuron_module.build())
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=False)
    patches.patch_autocast(emulated=("neuron",), foreign=("cuda",), disable=False)
    patches.patch_grad_scaler(emulated=("neuron",), foreign=("cuda",))
    patches.patch_compile("original", None)
    patches.patch_distributed("plain")
    patches.patch_accelerator("neuron")
    sys.path.insert(0, STANDIN_DIR)
    return MapOnlyMode()


def _setup_device(config: dict[str, Any]) -> Any:
    """Real TorchNeuron: nothing emulated. torch.compile calls are recorded and graph breaks
    under fullgraph=True are reported rather than raised; the backend stays the user's."""
    from porter.check.harness import patches
    from porter.check.harness.device_mode import ObserveMode

    patches.patch_compile("port", None, keep_options=True)

    return ObserveMode("neuron")


def _skip_harness_frames() -> None:
    """Keep Dynamo from compiling the harness's own functions as frames.

    When a graph break runs an op eagerly, the mode's ``__torch_function__`` executes as a Python
    frame under Dynamo's frame hook, which would try to compile it (and report a spurious graph
    break inside the harness). Inlining the mode while tracing user code is unaffected.
    """
    import types

    import torch._dynamo.eval_frame as eval_frame

    from porter.check.harness import backend, device_mode, neuron_module, patches, state

    def codes(obj: Any, seen: set[int]) -> Any:
        if isinstance(obj, types.CodeType):
            if id(obj) in seen:
                return
            seen.add(id(obj))
            yield obj
            for const in obj.co_consts:
                yield from codes(const, seen)
        elif isinstance(obj, (types.FunctionType, types.MethodType)):
            yield from codes(obj.__code__, seen)
        elif isinstance(obj, (classmethod, staticmethod)):
            yield from codes(obj.__func__, seen)
        elif isinstance(obj, type):
            for value in vars(obj).values():
                yield from codes(value, seen)

    seen: set[int] = set()
    for module in (device_mode, patches, neuron_module, backend, state):
        for value in vars(module).values():
            if getattr(value, "__module__", None) == module.__name__:
                for code in codes(value, seen):
                    eval_frame.skip_code(code)


_USER_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _record_fullgraph_break(exc: BaseException) -> None:
    """A graph break under ``fullgraph=True`` raised (as it does on the device): record it as the
    graph break it is, at the user's line, with Dynamo's whole reason."""
    try:
        from torch._dynamo.exc import Unsupported
    except ImportError:
        return
    if not isinstance(exc, Unsupported):
        return
    text = str(exc)
    reason, _, trace = text.partition("from user code:")
    trace = trace.split("Set TORCHDYNAMO_VERBOSE")[0]
    file, line = "<unknown>", 0
    for found_file, found_line in _USER_FRAME.findall(trace):
        file, line = found_file, int(found_line)  # the innermost frame Dynamo names
    stack = getattr(exc, "real_stack", None)
    if line == 0 and stack:
        file, line = stack[-1].filename, int(stack[-1].lineno or 0)
    lines = [ln.rstrip() for ln in reason.strip().splitlines() if ln.strip()]
    STATE.graph_breaks.append(
        {"file": file, "line": line, "reason": "\n".join(lines)[:2000], "step": STATE.steps, "raised": True}
    )


def _frames(tb: Any) -> list[dict[str, Any]]:
    return [
        {"file": f.filename, "line": f.lineno, "name": f.name, "code": f.line or ""}
        for f in traceback.extract_tb(tb)
    ]


def setup(config: dict[str, Any]) -> Any:
    """Everything a run needs before the script's first line; returns the mode to enter.

    Used by the launched process and by every process the script spawns (harness/child.py).
    """
    STATE.max_steps = int(config.get("steps", 3))
    role = config.get("role", "port")
    target = config.get("target", "emulated")
    if target == "device":
        mode = _setup_device(config)
    elif role == "original":
        mode = _setup_emulated_original(config)
    elif role == "plain":
        mode = _setup_plain(config)
    else:
        mode = _setup_emulated_port(config)
    from porter.check.harness import dynamo_log

    if role not in ("original", "plain"):  # the original runs eagerly: no Dynamo to watch (and ~5 s less import)
        dynamo_log.install()
        _skip_harness_frames()
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(_step_hook)
    if config.get("nudge"):
        register_optimizer_step_post_hook(_nudge_hook)
    _count_optimizers()
    if target == "emulated":
        from porter.check.harness import child

        child.propagate(config)
    from porter.check.harness import patches

    patches.patch_threads(mode)  # the script's threads run under the mode too
    from porter.check.harness import schedule

    schedule.install(STATE.note)  # a thread pool's draws from the shared generators in submit order
    from porter.check.harness import entropy

    # what the script draws from the OS is the same in every run (an unseeded env, default_rng())
    entropy.pin(int(config.get("seed", 0)), str(config.get("entropy_stream") or "main"))
    _seed(int(config.get("seed", 0)))
    script = os.path.abspath(config["script"])
    # the script's own folder first: its local packages, never the other run's
    sys.path.insert(0, os.path.dirname(script))
    return mode


def run(config: dict[str, Any]) -> dict[str, Any]:
    """Run the script under the configured target; return the raw record."""
    started = time.perf_counter()
    import torch

    role = config.get("role", "port")
    target = config.get("target", "emulated")
    mode = setup(config)
    script = os.path.abspath(config["script"])
    sys.argv = [script, *config.get("args", [])]
    os.chdir(config.get("cwd") or os.path.dirname(script))
    status, error = "completed", None
    script_started = time.perf_counter()
    try:
        with mode:
            runpy.run_path(script, run_name="__main__")
    except StopRun:
        status = "stopped"
    except SystemExit as done:
        if done.code not in (None, 0):
            status = "crashed"
            error = {"type": "SystemExit", "message": f"exit status {done.code}", "frames": _frames(done.__traceback__), "text": ""}
    except BaseException as exc:  # the script's own crash: report it, mapped to its line
        _record_fullgraph_break(exc)
        status = "crashed"
        error = {
            "type": type(exc).__name__,
            "message": str(exc)[:4000],
            "frames": _frames(exc.__traceback__),
            "text": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-8000:],
        }
    record = dump()
    record.update(
        {
            "status": status,
            "error": error,
            "role": role,
            "target": target,
            "wall_s": time.perf_counter() - started,
            "script_s": time.perf_counter() - script_started,
            "torch": torch.__version__,
        }
    )
    if target == "device":
        record.update(_device_extras())
    else:
        try:
            import torch_mlir  # noqa: F401

            record["torch_mlir"] = getattr(torch_mlir, "__version__", "installed")
        except ImportError:
            record["torch_mlir"] = None
    return record


def _device_extras() -> dict[str, Any]:
    """What only a real TorchNeuron can say: ops that fell back to CPU, and its compile metrics."""
    extras: dict[str, Any] = {"fallback_ops": None, "dynamo_metrics": None}
    try:
        import torch
        import torch_neuronx

        extras["fallback_ops"] = sorted(set(str(op) for op in torch_neuronx.get_fallback_ops()))
        # torch_neuronx registers torch.neuron at import (torch._register_device_module): torch's stubs cannot know it.
        metrics = torch.neuron.get_dynamo_metrics()  # type: ignore[attr-defined]
        extras["dynamo_metrics"] = [m if isinstance(m, dict) else _as_dict(m) for m in metrics]
        extras["torch_neuronx"] = getattr(torch_neuronx, "__version__", "unknown")
    except Exception as error:  # a missing API is reported, not fatal
        extras["device_error"] = f"{type(error).__name__}: {error}"
    return extras


def _as_dict(obj: Any) -> dict[str, Any]:
    fields = getattr(obj, "__dataclass_fields__", None) or getattr(obj, "__dict__", {})
    return {name: getattr(obj, name) for name in fields if isinstance(getattr(obj, name, None), (int, float, str, bool))}


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as handle:
        config = json.load(handle)
    record = run(config)
    with open(config["result_path"], "w", encoding="utf-8") as handle:
        json.dump(record, handle, default=str)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: scripts leave threads, process groups and DataLoader workers behind.
    os._exit(0)
