"""Shared knowledge about device strings and device-typed expressions (no rule lives here).

What each device idiom becomes (default style → ``--style accelerator``), torch 2.13 names:

===============================================  ==================================  ============================================================
idiom                                            default (``neuron``)                ``--style accelerator``
===============================================  ==================================  ============================================================
``"cuda"`` / ``"cuda:1"`` / ``f"cuda:{r}"``      ``"neuron"`` / ``"neuron:1"`` ...   ``torch.accelerator.current_accelerator().type`` (+ ``:idx``)
``device.type == "cuda"``, ``"cuda" in dev``     ``== "neuron"``, ``"neuron" in``    ``!= "cpu"``, ``"cpu" not in dev``
``x.is_cuda``                                    ``x.device.type == "neuron"``       ``x.device.type != "cpu"``
``x.cuda()`` / ``x.cuda(i)``                     ``.to("neuron")`` / ``f"neuron:{i}"`` ``.to(torch.accelerator.current_accelerator())`` / ``.to(i)``
``x.to(local_rank)``                             ``.to(f"neuron:{local_rank}")``     unchanged (an int is an index of the current accelerator)
``map_location=lambda s, l: s.cuda(i)``          ``map_location=f"neuron:{i}"``      ``map_location=torch.device(i)``
``torch.cuda.X`` (table)                         ``torch.neuron.X``                  ``torch.accelerator.Y`` / ``torch.Stream`` / ``torch.manual_seed``
                                                                                     / ``torch.get_device_module().X``
``set_default_tensor_type(cuda.FloatTensor)``    ``set_default_device("neuron")``    ``set_default_device(torch.accelerator.current_accelerator())``
``custom_fwd`` (``torch.cuda.amp``)              ``device_type="neuron"``            ``device_type=getattr(current_accelerator(), "type", "cpu")``
backend ``"nccl"``                               ``"neuron"``                        ``get_default_backend_for_device(current_accelerator() or "cpu")``
cuDNN / TF32 switches                            removed                             kept (inert off CUDA, still useful on a GPU)
``xm.xla_device()``                              ``torch.device("neuron")``          ``torch.accelerator.current_accelerator()``
===============================================  ==================================  ============================================================
"""

from __future__ import annotations

import re

import libcst as cst

from porter.engine.changes import ImportSpec
from porter.rules._lib.imports import torch_alias
from porter.rules._lib.nodes import dotted, string_value

CUDA_DEVICE = re.compile(r"^cuda(:\d+)?$")
# Names that hold a device (or a device type): device, DEVICE, self.device, device_type, train_dev ...
DEVICE_NAME = re.compile(r"(?i)(^|_)(device|devices|dev|device_type|map_location|accelerator)(_|$)")
DEVICE_KEYWORDS = frozenset({"device", "map_location", "device_type", "default_device", "devices"})


def cuda_string(node: cst.CSTNode) -> bool:
    """A literal ``"cuda"``/``"cuda:N"`` or an f-string ``f"cuda:{...}"``."""
    value = string_value(node)
    if value is not None:
        return bool(CUDA_DEVICE.match(value))
    if isinstance(node, cst.FormattedString) and node.parts:
        first = node.parts[0]
        if isinstance(first, cst.FormattedStringText):
            if first.value == "cuda:" and len(node.parts) >= 2:
                return True
            if first.value == "cuda" and len(node.parts) == 1:
                return True
    return False


def neuron_string(node: cst.BaseExpression) -> cst.BaseExpression:
    """The ``neuron`` spelling of a CUDA device string node (quotes and prefix kept)."""
    if isinstance(node, cst.SimpleString):
        old = node.value
        index = old.index("cuda")
        return node.with_changes(value=old[:index] + "neuron" + old[index + 4 :])
    if isinstance(node, cst.FormattedString):
        first = node.parts[0]
        assert isinstance(first, cst.FormattedStringText)
        return node.with_changes(parts=[first.with_changes(value="neuron" + first.value[4:]), *node.parts[1:]])
    return node


def device_named(node: cst.CSTNode) -> bool:
    """An expression whose name says it holds a device: ``device``, ``self.device``, ``x.device.type``."""
    if isinstance(node, cst.Call) and dotted(node.func) in {"str", "repr"} and node.args:
        return device_named(node.args[0].value)
    if isinstance(node, cst.Subscript):  # batch["device"], cfg.devices[0]
        return device_named(node.value)
    text = dotted(node)
    if text is None:
        return False
    parts = text.split(".")
    if parts[-1] == "type" and len(parts) > 1:
        return True
    return bool(DEVICE_NAME.search(parts[-1]))


# ---------------------------------------------------------------- added for the NRN1xx/NRN3xx rules
import libcst.matchers as _m  # noqa: E402  (kept next to the helpers that use it)

from porter.rules._lib.args import keyword as _keyword  # noqa: E402
from porter.rules._lib.args import positional as _positional  # noqa: E402

# --style accelerator: the device-generic spelling of the device type ("cuda" -> this expression).
ACCELERATOR_TYPE = "torch.accelerator.current_accelerator().type"
# The same where no availability test guards it: current_accelerator() is None on a CPU-only host,
# where the original's "cuda" is kept (a GradScaler("cuda") there disables itself, as before; a
# set of device types keeps meaning what it did).
ACCELERATOR_TYPE_OR_CUDA = 'getattr(torch.accelerator.current_accelerator(), "type", "cuda")'

# "cuda:{}".format(i) / "cuda:%d" % i templates: unambiguous device spellings wherever they appear.
CUDA_TEMPLATE = re.compile(r"^cuda:(\{\}|\{0\}|\{[a-z_]\w*\}|%d|%s|%i)$")

# Names that conventionally hold an integer device index (a local rank or a GPU number).
INT_DEVICE_NAME = re.compile(
    r"(?i)^(local_rank|ddp_local_rank|rank|gpu|gpu_id|gpu_idx|gpu_index|device_id|device_idx|"
    r"device_index|local_gpu|gpu_rank|local_device)$"
)


def accelerator_string(node: cst.BaseExpression, torch_name: str = "torch") -> cst.BaseExpression:
    """The ``--style accelerator`` spelling of a CUDA device string node.

    ``"cuda"`` -> ``torch.accelerator.current_accelerator().type``; ``"cuda:1"`` ->
    ``f"{torch.accelerator.current_accelerator().type}:1"``; ``f"cuda:{r}"`` likewise.
    """
    kind = retorch(ACCELERATOR_TYPE, torch_name)
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        assert isinstance(value, str)
        if value == "cuda":
            return cst.parse_expression(kind)
        quote = '"' if "'" in node.quote or '"' not in value else "'"
        return cst.parse_expression(f"f{quote}{{{kind}}}{value[4:]}{quote}")
    if isinstance(node, cst.FormattedString):
        first = node.parts[0]
        assert isinstance(first, cst.FormattedStringText)
        head = cst.FormattedStringExpression(expression=cst.parse_expression(kind))
        rest = [first.with_changes(value=first.value[4:])] if first.value[4:] else []
        return node.with_changes(parts=[head, *rest, *node.parts[1:]])
    return node


def map_location_cuda_call(lam: cst.Lambda) -> cst.Call | None:
    """For ``lambda storage, loc: storage.cuda(...)``, the ``.cuda(...)`` call; else None."""
    params = lam.params.params
    body = lam.body
    if not params or not isinstance(body, cst.Call) or not isinstance(body.func, cst.Attribute):
        return None
    if body.func.attr.value != "cuda" or not _m.matches(body.func.value, _m.Name(params[0].name.value)):
        return None
    if any(arg.star or (arg.keyword is not None and arg.keyword.value != "device") for arg in body.args):
        return None
    return body


def cuda_call_index(call: cst.Call) -> cst.BaseExpression | None:
    """The device index given to ``x.cuda(i)`` / ``x.cuda(device=i)``, if any."""
    arg = _positional(call, 0) or _keyword(call, "device")
    return arg.value if arg is not None else None


def torch_import(module: cst.Module) -> tuple[ImportSpec, ...]:
    """``(ImportSpec("torch"),)`` when the file lacks a plain top-level ``import torch``, else ``()``.

    Asking for an import the file already has is harmless, but the engine sorts the needed
    imports and a bare spec next to another rule's ``from torch import x`` spec cannot be
    ordered (None < str); not asking avoids that in the common case.
    """
    return () if torch_alias(module) == "torch" else (ImportSpec("torch"),)


def torch_ref(module: cst.Module) -> tuple[str, tuple[ImportSpec, ...]]:
    """How generated code names the torch module here: ``("th", ())`` after ``import torch as th``,
    ``("torch", ())`` after ``import torch``, else ``("torch", (ImportSpec("torch"),))``."""
    alias = torch_alias(module)
    return (alias, ()) if alias else ("torch", (ImportSpec("torch"),))


def retorch(text: str, name: str) -> str:
    """Generated source ``text`` with its ``torch.`` references spelled ``name.``."""
    return text if name == "torch" else re.sub(r"\btorch\.", f"{name}.", text)
