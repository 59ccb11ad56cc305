"""The TorchFunctionMode that makes an emulated device real enough to run and to observe.

Tensors placed on the emulated device (``neuron`` for a port, ``cuda`` for an original) live on the
CPU but carry a tag (``_porter_dev``); the mode answers ``tensor.device`` with the emulated device for
tagged tensors, so scripts and libraries take the branch they take on the real device. Every op
propagates the tag to its outputs. Along the way the mode records, by user source line and step:
host syncs on device tensors, placements and where they resolved, float64 tensors on the device,
CPU/device mixing, CUDA uses in a port, and the loss each ``.backward()`` was called on.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch
from torch._C import _functorch
from torch.nn.parameter import is_lazy
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

from porter.check.harness import neuron_module
from porter.check.harness.state import STATE, backward_done, in_library, project_frame, quiet, user_location, user_stack

TAG = "_porter_dev"
_HOOKED = "_porter_grad_hooked"
_DEVICE_GETTER = torch._C.TensorBase.__dict__["device"]
_IS_CUDA_GETTER = torch._C.TensorBase.__dict__["is_cuda"]
_IS_CPU_GETTER = torch._C.TensorBase.__dict__["is_cpu"]
_DATA = torch._C.TensorBase.__dict__["data"]

T = torch.Tensor
SYNC_KINDS: dict[Any, str] = {
    T.item: "item",
    T.tolist: "tolist",
    T.numpy: "numpy",
    T.__bool__: "__bool__",
    T.__float__: "__float__",
    T.__int__: "__int__",
    T.__index__: "__index__",
    T.__repr__: "repr",
    T.__format__: "format",
}
# Ops that legitimately take CPU tensors next to device tensors (copies, indexing, placement).
MIXING_OK = {
    T.to, T.copy_, T.__setitem__, T.__getitem__, T.index_select, T.index_put_, T.index_add_,
    torch.index_select, T.new_tensor, torch.tensor, torch.as_tensor, T.set_, T.cpu, T.cuda,
    T.pin_memory, T.backward, torch.autograd.backward, T.numpy,
    T.is_set_to,  # compares storages, computes nothing
    torch._has_compatible_shallow_copy_type,  # Module._apply asks whether `param.data = new` may rebind: no compute
    torch._foreach_copy_,  # per-tensor copy_ across devices (ATen's slow path; the fast path needs one device)
}


def _in_place(func: Any) -> bool:
    """An in-place op (``copy_``, ``add_``, ``_foreach_copy_``): it writes into its first argument.
    ``set_`` is not: it gives its first argument the source's storage, and so its device."""
    name = getattr(func, "__name__", "")
    return name.endswith("_") and not name.endswith("__") and name != "set_"


def _python_override(args: tuple, kwargs: dict) -> Any:
    """The type of the first argument (one level of lists) that is not a tensor but overrides torch
    functions in Python (``__torch_function__``), else None."""
    for a in (*args, *kwargs.values()):
        for b in (a if isinstance(a, (list, tuple)) else (a,)):
            if not isinstance(b, torch.Tensor) and callable(getattr(type(b), "__torch_function__", None)):
                return type(b)
    return None


def dev_of(t: torch.Tensor) -> str | None:
    """The emulated device a tensor is on (None: a plain CPU tensor).

    Inside ``torch.vmap`` (or another functorch transform) a function sees wrappers made in C++,
    never tagged: a wrapper is on the device of the tensor it wraps (untagged, torchrl's vmapped
    Q-networks read as CPU/device mixing at every layer, and ``x.device`` as the CPU).
    """
    dev = getattr(t, TAG, None)
    if dev is None and isinstance(t, torch.Tensor) and _functorch.is_functorch_wrapped_tensor(t):
        return dev_of(_functorch.get_unwrapped(t))
    return dev


def _hook_grad(dev: str) -> Callable[[torch.Tensor], None]:
    def hook(p: torch.Tensor) -> None:
        if p.grad is not None:
            setattr(p.grad, TAG, dev)

    return hook


def tag(t: torch.Tensor, dev: str) -> None:
    """Mark ``t`` as living on ``dev``; leaves that need gradients pass the tag to their ``.grad``.

    Gradients are made by the autograd engine in C++, which never calls the mode, so a hook does it.
    """
    setattr(t, TAG, dev)
    if is_lazy(t):  # a lazy module's UninitializedParameter takes no hook (it keeps the tag once materialized)
        return
    if t.requires_grad and t.is_leaf and not getattr(t, _HOOKED, False):
        t.register_post_accumulate_grad_hook(_hook_grad(dev))
        setattr(t, _HOOKED, True)


def _sized(t: torch.Tensor) -> bool:
    """A host tensor with dimensions (mixing it with a device tensor is a finding). A lazy module's
    UninitializedParameter has no shape yet: reading one raises (LazyLinear's own __init__)."""
    return not is_lazy(t) and t.dim() > 0


class DeviceMode(TorchFunctionMode):
    """Maps emulated devices to CPU and collects what a device run would reveal.

    ``emulate``: the device type this run stands in for ("neuron" for a port, "cuda" for an original).
    ``foreign``: device types mapped to CPU too but recorded as findings, not placed (CUDA in a port).
    """

    def __init__(self, emulate: str, foreign: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.emulate = emulate
        self.foreign = foreign
        self.device = torch.device(emulate, 0)

    # -- device arguments ------------------------------------------------------------------------
    def _kind(self, value: Any) -> str | None:
        """The device type a device-like argument names, or None if it is not device-like."""
        if isinstance(value, torch.device):
            return value.type
        if isinstance(value, str):
            head = value.split(":", 1)[0]
            if head in ("cpu", "meta", self.emulate) or head in self.foreign:
                return head
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return self.emulate  # integer placements name the accelerator
        return None

    def _placement(self, requested: str, resolved: str) -> None:
        file, line = user_location()
        STATE.placements[(requested, resolved, file, line)] += 1
        if requested in self.foreign:
            STATE.cuda_uses[(f"placement on '{requested}'", file, line)] += 1

    def _sync(self, kind: str) -> None:
        STATE.syncs[(kind, STATE.steps, user_stack())] += 1

    # -- the mode ---------------------------------------------------------------------------------
    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if torch.compiler.is_compiling():
            dev = kwargs.get("device")
            if dev is not None and self._kind(dev) not in (None, "cpu", "meta"):
                kwargs = {**kwargs, "device": "cpu"}
            if func is T.to and len(args) > 1 and self._kind(args[1]) not in (None, "cpu", "meta"):
                # x.to(device) traced: the emulated device is the CPU here too (a real PrivateUse1
                # fake tensor would meet the CPU ones: "Tensor device mismatch", torchrl's gamma.to(device))
                args = (args[0], "cpu", *args[2:])
            override = _python_override(args, kwargs)
            if override is not None:
                # traced too: a TensorDict's torch.cat/stack runs its own torch calls with this mode
                # off, and a `device=` it passes (the TensorDict's, "neuron:0") would make a
                # PrivateUse1 fake tensor that meets the CPU ones ("Tensor device mismatch")
                with self:
                    return override.__torch_function__(func, types, args, kwargs)
            return func(*args, **kwargs)
        if getattr(func, "__self__", None) is _DEVICE_GETTER:
            dev = dev_of(args[0])
            if dev is not None and not _asked_by_mesh_code():
                return torch.device(dev, neuron_module._current if dev == "neuron" else 0)
            return func(*args)
        if STATE.is_quiet():
            dev = kwargs.get("device")
            if dev is not None and self._kind(dev) not in (None, "cpu", "meta"):
                kwargs = {**kwargs, "device": "cpu"}
            return func(*args, **kwargs)
        if getattr(func, "__self__", None) is _IS_CUDA_GETTER:
            return dev_of(args[0]) == "cuda"
        if getattr(func, "__self__", None) is _IS_CPU_GETTER:
            # as .device says: tensordict's to("cpu") skips the copy of a leaf whose is_cpu is True
            return dev_of(args[0]) is None
        if getattr(func, "__self__", None) is _DATA and getattr(func, "__name__", "") == "__set__":
            # t.data = other: t now holds other's storage, so other's device (tensordict's
            # TensorDictParams._apply rebinds a module's buffers so when it moves them)
            out = func(*args, **kwargs)
            moved = dev_of(args[1]) if len(args) > 1 and isinstance(args[1], torch.Tensor) else None
            if moved is not None:
                tag(args[0], moved)
            elif dev_of(args[0]) is not None:
                delattr(args[0], TAG)
            return out

        kind = SYNC_KINDS.get(func)
        if kind is not None:
            if args and isinstance(args[0], torch.Tensor) and dev_of(args[0]) is not None:
                self._sync(kind)
            with quiet():
                return func(*args, **kwargs)
        if func is T.to:
            return self._to(args, kwargs)
        if func is T.cpu:
            return self._to_cpu(args[0])
        if func is T.cuda:
            return self._place(args[0], "cuda")
        if func is T.pin_memory:
            return args[0]  # CPU-only builds raise here; a host buffer is already "pinned" enough
        if func is T.backward or func is torch.autograd.backward:
            self._capture_loss(args, kwargs)
            out = func(*args, **kwargs)
            backward_done()
            return out

        override = _python_override(args, kwargs)
        if override is not None:
            # a Python-level override (torchrl's specs, a TensorDict) runs torch calls of its own, and
            # this mode is off while it handles the call: they run under it again, or a spec moving its
            # bounds to the emulated device would reach the real (kernel-less) PrivateUse1 backend
            with self:
                return override.__torch_function__(func, types, args, kwargs)

        if func is torch._C._nn._parse_to:
            # Module.to's argument parser computes nothing: it hands the user's device to Module.to's
            # convert, whose t.to(device) is placed by _to (remapped here, Module.to("cuda") read "cpu")
            return func(*args, **kwargs)
        placed = None
        dev = kwargs.get("device")
        if dev is None and func in _device_constructors():
            # `with torch.device("neuron"):` / set_default_device: torch's DeviceContext sits at the
            # bottom of the mode stack (torch/utils/_device.py), so it would add the device after
            # this mode passed: the factory is placed on the context's device here instead
            dev = torch.utils._device.CURRENT_DEVICE
        if dev is not None:
            requested = self._kind(dev)
            if requested not in (None, "cpu", "meta"):
                kwargs = {**kwargs, "device": "cpu"}
                placed = requested
        out = func(*args, **kwargs)
        if placed is not None:
            self._placement(placed, "cpu")
            if placed == self.emulate:
                self._tag_outputs(out, placed, func)
            return out
        self._propagate(func, args, out)
        return out

    # -- helpers ----------------------------------------------------------------------------------
    def _propagate(self, func: Any, args: tuple, out: Any) -> None:
        tagged = None
        plain = False
        flat = [b for a in args for b in (a if isinstance(a, (list, tuple)) else (a,))]  # one level of lists
        for b in flat:
            if isinstance(b, torch.Tensor):
                d = dev_of(b)
                if d is not None:
                    tagged = d
                elif _sized(b):
                    plain = True
        if tagged is None:
            return
        if plain and func not in MIXING_OK and not _asked_by_mesh_code():  # FSDP2's own CPU-mesh buffers
            file, line = user_location()
            STATE.mixing[(_name(func), file, line, project_frame() if in_library(file) else None)] += 1
        if _in_place(func):
            return  # its output is its first argument, which stays where it is (a CPU copy_ target stays CPU)
        self._tag_outputs(out, tagged, func)

    def _tag_outputs(self, out: Any, dev: str, func: Any) -> None:
        if isinstance(out, torch.Tensor):
            tag(out, dev)
            STATE.reached_device = STATE.reached_device or dev == "neuron"
            if out.dtype is torch.float64 and dev == "neuron":
                file, line = user_location()
                STATE.float64[(_name(func), file, line)] += 1
        elif isinstance(out, (list, tuple)):
            for o in out:
                if isinstance(o, torch.Tensor):
                    self._tag_outputs(o, dev, func)

    def _to(self, args: tuple, kwargs: dict) -> Any:
        t = args[0]
        rest = list(args[1:])
        target: Any = None
        if rest and isinstance(rest[0], torch.Tensor):
            target = dev_of(rest[0]) or "cpu"
            rest[0] = rest[0].dtype
        elif rest and isinstance(rest[0], int) and not isinstance(rest[0], bool):
            target = self.emulate  # .to(local_rank): an accelerator ordinal
            rest = rest[1:]
        elif rest and isinstance(rest[0], (str, torch.device)):
            target = rest[0]
            rest = rest[1:]
        elif rest and rest[0] is None:
            rest = rest[1:]
        if "device" in kwargs:
            target = kwargs["device"]
        kw = {k: v for k, v in kwargs.items() if k != "device" and v is not None}
        # what remains positionally is (dtype, non_blocking, copy), as in Tensor.to's signature
        for name, value in zip(("dtype", "non_blocking", "copy"), rest):
            if value is not None:
                kw[name] = value
        with quiet():
            moved = T.to(t, **kw) if kw.get("dtype") is not None or kw.get("copy") or kw.get("memory_format") is not None else t
        if target is None:
            if dev_of(t) is not None:
                self._propagate(T.to, (t,), moved)
            return moved
        kind = self._kind(target) or "cpu"
        if kind == "cpu" and dev_of(t) is not None and _caller_in_torch():
            # torch's own code asked for "cpu" because C++ reports the real (CPU) device of an
            # emulated tensor (e.g. clip_grad_norm_ grouping tensors by device): on a Neuron device
            # it would have named "neuron". An emulation artifact, not a transfer.
            if moved is not t:
                tag(moved, dev_of(t))  # type: ignore[arg-type]
            return moved
        if kind == "cpu":
            if dev_of(t) is not None:
                self._sync("to(cpu)")
                with quiet():
                    return moved.clone() if moved is t else moved
            return moved
        return self._place(moved, kind, fresh=moved is not t)

    def _place(self, t: torch.Tensor, kind: str, fresh: bool = False) -> torch.Tensor:
        """Put ``t`` on device ``kind`` (a copy, as a host-to-device transfer is).

        Parameters are tagged in place: ``Module.to`` assigns ``param.data`` and keeps the object;
        so is a lazy buffer (no data yet: it materializes where it is tagged).
        """
        self._placement(kind, "cpu")
        if kind != self.emulate:  # a foreign device (CUDA in a port): runs on CPU, recorded above
            return t
        if dev_of(t) == kind:
            return t
        # a lazy buffer has no data to copy (clone raises), and is moved as its module's object
        if not (fresh or isinstance(t, torch.nn.Parameter) or is_lazy(t)):
            with quiet():
                t = t.clone()
        self._tag_outputs(t, kind, T.to)
        return t

    def _to_cpu(self, t: torch.Tensor) -> torch.Tensor:
        """``.cpu()``: a device-to-host copy (a host sync) for a device tensor; a no-op otherwise."""
        if dev_of(t) is None:
            return t
        self._sync("cpu")
        with quiet():
            return t.clone()

    def _capture_loss(self, args: tuple, kwargs: dict) -> None:
        target = args[0] if args else kwargs.get("tensors")
        if isinstance(target, (list, tuple)):
            target = target[0] if target else None
        if not isinstance(target, torch.Tensor) or target.numel() != 1:
            return
        source = getattr(target, "_porter_unscaled", target)
        with quiet():
            value = float(source.detach().float().reshape(()))
        STATE.losses.append((STATE.steps, value))


# Code that works on a CPU device mesh (patches.patch_device_mesh): it must see the real device.
_MESH_CODE = ("torch.distributed.fsdp", "torch.distributed.tensor")


# Dispatch plumbing between a caller and the mode (custom ops, overrides, decorators).
_PLUMBING = ("porter.check", "torch._ops", "torch.overrides", "torch._library", "torch.utils._contextlib")


def _asked_by_mesh_code() -> bool:
    import sys

    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_PLUMBING):
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__", "").startswith(_MESH_CODE)


def _caller_in_torch() -> bool:
    """True when the first frame outside the harness belongs to the torch package."""
    import sys

    from porter.check.harness.state import _PORTER_CHECK, _torch_dir

    frame: FrameType | None = sys._getframe(2)
    torch_dir = _torch_dir()
    while frame is not None and frame.f_code.co_filename.startswith(_PORTER_CHECK):
        frame = frame.f_back
    if frame is not None and frame.f_code.co_name == "convert" and frame.f_code.co_filename.endswith(_MODULE_PY):
        return False  # Module.to(device)'s own convert: the device is the user's, not one C++ reported
    return frame is not None and frame.f_code.co_filename.startswith(torch_dir)


_MODULE_PY = os.path.join("torch", "nn", "modules", "module.py")


def _name(func: Any) -> str:
    name = getattr(func, "__name__", None) or str(func)
    owner = getattr(func, "__objclass__", None) or getattr(func, "__qualname__", "")
    if isinstance(owner, type):
        return f"Tensor.{name}"
    return name


class ObserveMode(TorchFunctionMode):
    """Device target: nothing is emulated or remapped; only host syncs on real device tensors and
    the loss are collected (the same collectors, reading the real device type)."""

    def __init__(self, device_type: str) -> None:
        super().__init__()
        self.device_type = device_type

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if torch.compiler.is_compiling() or STATE.is_quiet():
            return func(*args, **kwargs)
        kind = SYNC_KINDS.get(func)
        if kind is None and func in (T.cpu, T.to) and args and isinstance(args[0], torch.Tensor):
            target = kwargs.get("device", args[1] if len(args) > 1 else None)
            if func is T.cpu or (target is not None and str(target).startswith("cpu")):
                kind = "cpu" if func is T.cpu else "to(cpu)"
        if kind is not None and args and isinstance(args[0], torch.Tensor):
            with quiet():
                on_device = args[0].device.type == self.device_type
            if on_device:
                STATE.reached_device = True
                STATE.syncs[(kind, STATE.steps, user_stack())] += 1
            with quiet():
                return func(*args, **kwargs)
        if func is T.backward or func is torch.autograd.backward:
            DeviceMode._capture_loss(self, args, kwargs)  # type: ignore[arg-type]
            out = func(*args, **kwargs)
            backward_done()
            return out
        out = func(*args, **kwargs)
        if not STATE.reached_device and isinstance(out, torch.Tensor):
            with quiet():
                STATE.reached_device = out.device.type == self.device_type
        return out


class MapOnlyMode(TorchFunctionMode):
    """The bench's baseline ("plain CPU run"): ``neuron`` placements run on the CPU, nothing is
    tagged, counted or compiled. What remains is the cost of the script itself."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        dev = kwargs.get("device")
        if dev is not None and str(dev).split(":")[0] in ("neuron", "cuda"):
            kwargs = {**kwargs, "device": "cpu"}
        if func is T.to:
            args = tuple(
                "cpu" if isinstance(a, (str, torch.device)) and str(a).split(":")[0] in ("neuron", "cuda") else a
                for a in args
            )
        elif func is T.pin_memory:
            return args[0]
        return func(*args, **kwargs)
