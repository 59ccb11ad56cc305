"""torch's Transformer modules that test their mask on the host, and masks provably causal.

``nn.TransformerEncoder.forward`` (``is_causal=None``), ``nn.TransformerDecoder.forward``
(``tgt_is_causal=None``) and ``nn.Transformer.forward`` (``src_is_causal``/``tgt_is_causal=None``,
handed to the two) call ``_detect_is_causal_mask`` (torch 2.13 ``torch/nn/modules/transformer.py``
:535, :639): given a mask and no hint, ``bool((mask == causal).all())`` — a host sync on every call,
and a data-dependent branch Dynamo cannot trace under ``fullgraph=True``. With the hint given, the
function returns it unchanged. Shared by NRN609 (which passes the hint) and NRN411 (which leaves
``fullgraph`` off while the test is there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import libcst as cst

from porter.rules._lib.args import keyword, positional
from porter.rules._lib.nodes import dotted, method_name

Qualify = Callable[[cst.CSTNode], set[str]]


@dataclass(frozen=True)
class MaskSlot:
    """A mask parameter of a module's forward and the hint that stops its host test."""

    mask: str
    position: int  # of the mask in forward(...), without self
    hint: str
    hint_position: int


# forward signatures of torch 2.13 (torch/nn/modules/transformer.py:179, :405, :597).
SLOTS: dict[str, tuple[MaskSlot, ...]] = {
    "torch.nn.TransformerEncoder": (MaskSlot("mask", 1, "is_causal", 3),),
    "torch.nn.TransformerDecoder": (MaskSlot("tgt_mask", 2, "tgt_is_causal", 6),),
    "torch.nn.Transformer": (MaskSlot("src_mask", 2, "src_is_causal", 8), MaskSlot("tgt_mask", 3, "tgt_is_causal", 9)),
}
for _name in list(SLOTS):
    SLOTS[_name.replace("torch.nn.", "torch.nn.modules.transformer.")] = SLOTS[_name]
# nn.Transformer.generate_square_subsequent_mask(sz): the float mask of -inf above the diagonal that
# _detect_is_causal_mask compares with (it builds the same one, in the mask's dtype and device).
CAUSAL_BUILDERS = frozenset({"torch.nn.Transformer.generate_square_subsequent_mask",
                             "torch.nn.modules.transformer.Transformer.generate_square_subsequent_mask"})


# Module methods that return the module itself.
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "half", "bfloat16", "double", "requires_grad_"})


def module_kind(call: cst.Call, constructors: dict[str, str]) -> str | None:
    """The SLOTS key of the module ``call`` calls: ``self.encoder(...)`` or ``encoder(...)``, looked
    up in ``constructors`` (dotted receiver -> qualified constructor)."""
    name = dotted(call.func)
    return constructors.get(name) if name is not None and constructors.get(name) in SLOTS else None


def unhinted_masks(call: cst.Call, kind: str) -> list[tuple[MaskSlot, cst.BaseExpression]]:
    """The masks passed to ``call`` without their hint (each makes the module test it on the host)."""
    found = []
    if any(a.star for a in call.args):
        return []  # *args/**kwargs: which parameters they fill is not in view
    for slot in SLOTS[kind]:
        mask = keyword(call, slot.mask) or positional(call, slot.position)
        hint = keyword(call, slot.hint) or positional(call, slot.hint_position)
        if mask is not None and hint is None and not (isinstance(mask.value, cst.Name) and mask.value.value == "None"):
            found.append((slot, mask.value))
    return found


def causal_value(value: cst.BaseExpression, qualify: Qualify) -> bool:
    """``Transformer.generate_square_subsequent_mask(n)`` with no dtype, optionally moved with
    ``.to(DEVICE)`` (an attribute ending in ``.device`` or a name with "device" in it): the values
    ``_detect_is_causal_mask`` compares with, so the hint it would compute is True whenever the call
    runs at all (a square mask of another size fails the attention's own shape check)."""
    while isinstance(value, cst.Call) and method_name(value) == "to" and isinstance(value.func, cst.Attribute):
        args = value.args
        device = keyword(value, "device")
        if len(args) == 1 and device is not None:
            pass
        elif len(args) == 1 and args[0].keyword is None and _device_like(args[0].value):
            pass
        else:
            return False
        value = value.func.value
    # generate_square_subsequent_mask(sz, device=None, dtype=None): a third positional is the dtype.
    return (isinstance(value, cst.Call) and not qualify(value.func).isdisjoint(CAUSAL_BUILDERS)
            and keyword(value, "dtype") is None and positional(value, 2) is None and not any(a.star for a in value.args))


def _device_like(value: cst.BaseExpression) -> bool:
    text = dotted(value)
    return text is not None and (text.endswith(".device") or "device" in text.rsplit(".", 1)[-1])


def constructors_in(scope: cst.CSTNode, qualify: Qualify, nodes: Iterable[cst.CSTNode] | None = None) -> dict[str, str]:
    """``self.encoder = nn.TransformerEncoder(...)`` / ``encoder = ...`` in ``scope``: target -> qualified
    constructor (a target assigned twice, or from something else too, is left out). ``nodes``: the
    nodes of ``scope`` in pre-order (the order libcst's visit of ``scope`` meets them in, without its
    rebuilding of every node); only Assigns are read, so its Assigns alone will do (NRN609 passes the
    file's Assign bucket filed under each enclosing def and class)."""
    seen: dict[str, str | None] = {}

    def assign(node: cst.Assign) -> None:
        for target in node.targets:
            name = dotted(target.target)
            if name is None:
                continue
            kind = None
            value = node.value
            while isinstance(value, cst.Call) and method_name(value) in _SAME_MODULE and isinstance(value.func, cst.Attribute):
                value = value.func.value  # nn.TransformerEncoder(...).to(device) is the module itself
            if isinstance(value, cst.Call):
                kind = next((q for q in qualify(value.func) if q in SLOTS), None)
            seen[name] = kind if name not in seen else None

    if nodes is not None:
        for node in nodes:
            if type(node) is cst.Assign:
                assign(node)
    else:

        class _Assigns(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                assign(node)

        scope.visit(_Assigns())
    return {name: kind for name, kind in seen.items() if kind is not None}
