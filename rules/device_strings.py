"""NRN101: CUDA device strings in device positions become ``neuron`` strings."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.changes import Safety
from porter.rule import Rule
from porter.rules._device import DEVICE_KEYWORDS, DEVICE_NAME, cuda_string, device_named, neuron_string
from porter.rules._helpers import method_name, positional, string_value

# Callables whose first positional argument is a device (or device type).
_DEVICE_FIRST_ARG = frozenset(
    {
        "torch.device",
        "torch.set_default_device",
        "torch.autocast",
        "torch.amp.autocast",
        "torch.get_device_module",
        "torch.Generator",
    }
)


class DeviceStrings(Rule):
    """Port CUDA device strings where they are used as devices.

    What it does:
        Rewrites ``"cuda"``, ``"cuda:N"`` and ``f"cuda:{rank}"`` to ``"neuron"``, ``"neuron:N"``
        and ``f"neuron:{rank}"`` where the string is a device: the first argument of
        ``torch.device``/``.to()``/``torch.set_default_device``, a ``device=``/``map_location=``/
        ``device_type=`` keyword, a value assigned to or defaulting a device-named variable or
        parameter (``device``, ``self.device``, ``device_type``, ``dev``), a comparison or
        substring test against a device-named expression (``device.type == "cuda"``,
        ``"cuda" in device``), and either branch of a conditional expression in such a place.

    Why:
        On Trainium the PyTorch device type is ``neuron`` (``neuron:N`` with an index; the index of a
        process in a distributed job equals its local rank). A ``"cuda"`` device raises on a
        machine without CUDA. Both sides of substring tests are ported together: porting only the
        assignment would make ``"cuda" in device`` false on Neuron and silently take the CPU branch
        (for example turning autocast off).

    Before:
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        x = torch.zeros(4, device="cuda")
        device_type = "cuda" if "cuda" in device else "cpu"

    After:
        device = torch.device("neuron:0" if torch.neuron.is_available() else "cpu")
        x = torch.zeros(4, device="neuron")
        device_type = "neuron" if "neuron" in device else "cpu"

    Safety:
        Safe. Strings that are not in a device position (log messages, dict keys, comments,
        ``"cuda"`` compared with something that is not device-named) are left alone; a device
        string reached only through an unrelated variable name is missed (not changed).
    """

    code: ClassVar[str] = "NRN101"
    name: ClassVar[str] = "device-strings"
    summary: ClassVar[str] = 'CUDA device strings ("cuda", "cuda:N", f"cuda:{rank}") in device positions -> "neuron"'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("cuda",)
    order: ClassVar[int] = 10

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._consider(node)

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> bool:
        return False

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._consider(node)

    def _consider(self, node: cst.BaseExpression) -> None:
        if not cuda_string(node) or not self._in_device_position(node):
            return
        self.replace(node, neuron_string, 'device string "cuda" -> "neuron"')

    def _in_device_position(self, node: cst.CSTNode) -> bool:
        child: cst.CSTNode = node
        parent = self.parent(child)
        # Climb through conditional expressions and or-defaults: "cuda" if ok else "cpu", dev or "cuda".
        while isinstance(parent, (cst.IfExp, cst.BooleanOperation)):
            if isinstance(parent, cst.IfExp) and parent.test is child:
                return False
            child, parent = parent, self.parent(parent)
        if isinstance(parent, cst.Arg):
            return self._device_argument(parent)
        if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = (
                [target.target for target in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            )
            return any(device_named(target) for target in targets)
        if isinstance(parent, cst.Param):
            return bool(device_named(parent.name))
        if isinstance(parent, cst.DictElement) and parent.value is child:
            key = string_value(parent.key)
            return key is not None and bool(DEVICE_NAME.search(key))
        if isinstance(parent, cst.Comparison):
            return self._device_comparison(parent)
        if isinstance(parent, cst.ComparisonTarget):
            comparison = self.parent(parent)
            return isinstance(comparison, cst.Comparison) and self._device_comparison(comparison)
        return False

    def _device_argument(self, arg: cst.Arg) -> bool:
        call = self.parent(arg)
        if not isinstance(call, cst.Call):
            return False
        if arg.keyword is not None:
            name = arg.keyword.value
            if name in DEVICE_KEYWORDS:
                return True
            # argparse: parser.add_argument("--device", default="cuda")
            if name == "default" and method_name(call) == "add_argument":
                return any(
                    isinstance(a.value, cst.SimpleString) and "device" in str(a.value.evaluated_value)
                    for a in call.args
                    if a.keyword is None
                )
            return False
        if positional(call, 0) is not arg:
            return False
        return method_name(call) == "to" or self.matches(call.func, *_DEVICE_FIRST_ARG)

    def _device_comparison(self, comparison: cst.Comparison) -> bool:
        operands = [comparison.left, *(target.comparator for target in comparison.comparisons)]
        return any(device_named(operand) for operand in operands)
