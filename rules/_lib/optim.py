"""Optimizer facts shared by the optimizer rules (NRN501-NRN503, NRN511/NRN512): what Adam's
weight decay is, and the AdamW/foreach rewrites that keep the update identical."""

from __future__ import annotations

from typing import Literal

import libcst as cst

from porter.rules._lib.args import drop_keyword, keyword, positional, set_keyword_keep_layout

ADAMW = ("torch.optim.AdamW", "torch.optim.adamw.AdamW")
ADAM = ("torch.optim.Adam", "torch.optim.adam.Adam")
WEIGHT_DECAY_INDEX = 4  # Adam/AdamW(params, lr, betas, eps, weight_decay, amsgrad, ...)

AdamPlan = Literal["adamw", "adam-foreach", "adam-review", "adam-groups"]


def literal_number(node: cst.BaseExpression | None) -> float | None:
    """The value of an int/float literal (``0``, ``0.0``, ``1e-2``), else None."""
    if isinstance(node, cst.Integer):
        return float(int(node.value.replace("_", ""), 0))
    if isinstance(node, cst.Float):
        return float(node.value.replace("_", ""))
    return None


def literal_bool(node: cst.BaseExpression | None) -> bool | None:
    if isinstance(node, cst.Name) and node.value in {"True", "False"}:
        return node.value == "True"
    return None


def weight_decay_of(call: cst.Call) -> cst.Arg | None:
    return keyword(call, "weight_decay") or positional(call, WEIGHT_DECAY_INDEX)


def adam_plan(call: cst.Call) -> AdamPlan:
    """Adam with no or a literal-zero weight decay is AdamW(weight_decay=0.0): identical update."""
    decay = weight_decay_of(call)
    if decay is None:
        return "adamw"
    value = literal_number(decay.value)
    if value is None:
        return "adam-review"
    return "adamw" if value == 0 else "adam-foreach"


def fused_adamw(call: cst.Call, *, decay_default: bool) -> cst.Call:
    """``fused=True`` on an AdamW call; ``foreach`` dropped; ``weight_decay=0.0`` added if asked and absent."""
    call = drop_keyword(call, "foreach")
    if decay_default and weight_decay_of(call) is None:
        call = set_keyword_keep_layout(call, "weight_decay", cst.Float("0.0"))
    return set_keyword_keep_layout(call, "fused", cst.Name("True"))


def foreach_adam(call: cst.Call) -> cst.Call:
    """Adam keeps its (L2) weight decay; ``fused`` (no Neuron ``_fused_adam_`` kernel) → ``foreach=True``."""
    call = drop_keyword(call, "fused")
    return set_keyword_keep_layout(call, "foreach", cst.Name("True"))


def without_double_star(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """``call`` without the ``**arg`` argument (matched by its position among ``**`` arguments)."""
    stars = [a for a in call.args if a.star == "**"]
    index = next((i for i, a in enumerate(stars) if a.value.deep_equals(arg.value)), None)
    if index is None:
        return call
    kept = [a for a in call.args if a is not stars[index]]
    trailing = call.args[-1].comma
    if kept and call.args[-1] is stars[index]:
        kept[-1] = kept[-1].with_changes(comma=trailing)
    return call.with_changes(args=kept)
