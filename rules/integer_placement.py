"""NRN105: integer device placements ``.to(local_rank)`` become ``.to(f"neuron:{local_rank}")``."""

from __future__ import annotations

import re
from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import keyword, positional
from porter.rules._lib.branches import checked_not_none
from porter.rules._lib.integers import IntegerNames, NoneNames
from porter.rules._lib.nodes import dotted, method_name

_INDEX_PLACEMENT = re.compile(r"(?:\.to\(|device=)\s*(?:\w+\.)?(?:\w*(?:rank|gpu|device_id)\w*|\d+)\b")

# Device modules whose calls take a device index as it is (an int is what torch.neuron.set_device wants).
_DEVICE_MODULES = ("torch.cuda.", "torch.neuron.", "torch.accelerator.", "torch.xpu.", "torch.mps.")


class IntegerPlacement(Rule):
    """Port placements that name the device by an integer index.

    What it does:
        ``model.to(local_rank)`` → ``model.to(f"neuron:{local_rank}")``, ``x.to(0)`` →
        ``x.to("neuron:0")``, ``torch.zeros(4, device=gpu_id)`` → ``torch.zeros(4,
        device=f"neuron:{gpu_id}")``, ``x.to(device=self.gpu_id, non_blocking=True)`` likewise.
        With ``--style accelerator`` nothing changes: in torch 2.13 an integer device is an index
        of the current accelerator, which is already device-generic.

    Why:
        In CUDA code an integer device means ``cuda:N``. On Trainium the device index of a
        process equals its local rank (torch-neuronx source, csrc/core/NeuronDevice.cpp and distributed/backend.py), so ``f"neuron:{local_rank}"`` keeps the
        placement and states the device type, as the AWS examples write it.

    Before:
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model.to(self.gpu_id)
        source = source.to(self.gpu_id)

    After:
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model.to(f"neuron:{self.gpu_id}")
        source = source.to(f"neuron:{self.gpu_id}")

    Safety:
        Safe where the heuristic holds. Argument heuristic (``.to`` has no qualified receiver): the
        argument is an integer literal; or a name or attribute whose last part is a conventional
        index name (``local_rank``, ``rank``, ``gpu``, ``gpu_id``, ``device_id``, ``args.gpu``,
        ...); or a name/attribute this file assigns from ``int(...)`` (``int(os.environ
        ["LOCAL_RANK"])``), annotates as ``int``, binds with ``for i in range(...)``, or copies
        from such a name (``self.gpu_id = gpu_id``). Known misses (left unchanged): an index held
        in any other name (``d``, ``idx``), or one that arrives through a function call or
        another module. A conventional name the file assigns a string or ``torch.device(...)``
        (``gpu = torch.device("cuda")``), or annotates as ``torch.device``/``str``, is left alone,
        and so is a name copied from one (``device = self.local_device``);
        one that receives a device from elsewhere (a caller passing ``torch.device``) would be
        wrapped wrongly (not seen in the examples read). A value that may be None (an argparse
        option without a default, a parameter defaulting to None) is left alone unless an
        enclosing ``if x is not None:``/``if x:`` rules None out: ``.to(None)`` is a no-op.
    """

    code: ClassVar[str] = "NRN105"
    name: ClassVar[str] = "integer-placement"
    summary: ClassVar[str] = 'integer device placement .to(local_rank) -> .to(f"neuron:{local_rank}")'
    safety: ClassVar[Safety] = Safety.SAFE
    # The conventional index names the rule knows, and literal indices: a plain ".to(" would send
    # most of a large tree to the parser.
    triggers: ClassVar[tuple[str, ...]] = ("rank", "gpu", "device_id", "LOCAL_RANK", ".to(0", ".to(1", "device=0", "device=1")

    @classmethod
    def triggered_by(cls, text: str) -> bool:
        # ".to(" alone would send most of a large tree to the parser: look for an index-like
        # argument, or a LOCAL_RANK read whose int may be placed under any name.
        return "LOCAL_RANK" in text or _INDEX_PLACEMENT.search(text) is not None
    order: ClassVar[int] = 10

    def visit_Module(self, node: cst.Module) -> None:
        self._integers = self.analysis(IntegerNames)

    def visit_Call(self, node: cst.Call) -> None:
        if self.options.style == "accelerator":
            return
        if method_name(node) == "to":
            arg = positional(node, 0) or keyword(node, "device")
        elif any(name.startswith("torch.") and not name.startswith(_DEVICE_MODULES) for name in self.qualified(node.func)):
            arg = keyword(node, "device")  # factories (torch.zeros(..., device=0)); not the device
            # modules' runtime calls (torch.neuron.set_device(device=1)): they take an index
        else:
            return
        if arg is None or not self._is_index(arg.value):
            return
        if self.analysis(NoneNames).may_be_none(self, arg.value) and not checked_not_none(self, node, arg.value):
            return  # .to(None) leaves the tensor where it is; "neuron:None" would raise
        new = self._neuron(arg.value)
        self.replace(arg, lambda n: n.with_changes(value=new), 'integer device -> f"neuron:{index}"')  # type: ignore[attr-defined]

    def _is_index(self, value: cst.BaseExpression) -> bool:
        return self._integers.holds_index(value)

    def _neuron(self, value: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(value, cst.Integer):
            return cst.SimpleString(f'"neuron:{value.value}"')
        return cst.parse_expression(f'f"neuron:{{{dotted(value)}}}"')
