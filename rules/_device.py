"""Shared knowledge about device strings and device-typed expressions (no rule lives here)."""

from __future__ import annotations

import re

import libcst as cst

from porter.rules._helpers import dotted, string_value

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
