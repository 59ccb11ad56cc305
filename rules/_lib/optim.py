"""Optimizer facts shared by the optimizer rules (NRN501-NRN503, NRN511/NRN512): what Adam's
weight decay is, and the AdamW/foreach rewrites that keep the update identical."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

import libcst as cst

from porter.rules._lib.args import drop_keyword, keyword, positional, set_keyword_keep_layout
from porter.rules._lib.nodes import dotted
from porter.rules._lib.tree import child_index

if TYPE_CHECKING:
    from porter.engine.rule import Rule

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


_OPTIMIZER_NAME = re.compile(r"(?i)optim|^opt$|_opt$|^opt_")


def looks_like_optimizer(node: cst.BaseExpression) -> bool:
    """Whether a name or attribute is named like an optimizer (``optimizer``, ``self.opt_g``)."""
    text = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    return text is not None and bool(_OPTIMIZER_NAME.search(text.rsplit(".", 1)[-1]))


def optimizers_held(rule: Rule, ref: cst.BaseExpression) -> list[cst.Call] | None:
    """The Adam/AdamW constructions of the file that ``ref`` (an expression where it is used) may
    hold: ``[]`` when it holds another ``torch.optim`` optimizer, None when the file does not show
    what it holds. Heuristic: a plain name is looked up in the innermost function that binds it
    (or the module); an attribute (``self.optimizer``) anywhere in the file. Every binding must be
    a plain assignment of an optimizer construction (or a conditional choosing between some); a
    parameter, an unpacked or looped name, or any other value is not in view."""
    if isinstance(ref, cst.Call):
        return _constructed(rule, ref)
    text = dotted(ref) if isinstance(ref, (cst.Name, cst.Attribute)) else None
    if text is None:
        return None
    index = child_index(rule)
    if "." in text:
        scopes: list[cst.CSTNode] = [rule.context.module]
    else:
        scopes = [a for a in rule.ancestors(ref) if isinstance(a, cst.FunctionDef)] + [rule.context.module]
    for scope in scopes:
        values = _bindings(rule, index.walk(scope), text, scope if "." not in text else None)
        if values is None:
            return None
        if values:
            found: list[cst.Call] = []
            for value in values:
                held = _constructed(rule, value)
                if held is None:
                    return None
                found.extend(held)
            return found
    return None


def _constructed(rule: Rule, value: cst.BaseExpression) -> list[cst.Call] | None:
    if isinstance(value, cst.IfExp):
        body, orelse = _constructed(rule, value.body), _constructed(rule, value.orelse)
        return None if body is None or orelse is None else body + orelse
    if isinstance(value, cst.Call):
        if rule.matches(value.func, *ADAM, *ADAMW):
            return [value]
        if any(name.startswith("torch.optim.") and ".lr_scheduler" not in name for name in rule.qualified(value.func)):
            return []
    return None


def _bindings(rule: Rule, nodes: Iterable[cst.CSTNode], text: str, scope: cst.CSTNode | None) -> list[cst.BaseExpression] | None:
    """The values assigned to ``text`` among ``nodes`` (directly in ``scope`` when a plain name);
    None when it is bound in a way that does not show its value."""
    values: list[cst.BaseExpression] = []
    for node in nodes:
        if isinstance(node, cst.Param) and node.name.value == text and scope is not None:
            if _function_of(rule, node) is scope:
                return None
            continue
        if not isinstance(node, (cst.Name, cst.Attribute)) or dotted(node) != text:
            continue
        if scope is not None and (isinstance(node, cst.Attribute) or _function_of(rule, node) is not (scope if isinstance(scope, cst.FunctionDef) else None)):
            continue
        parent = rule.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            assign = rule.parent(parent)
            assert isinstance(assign, cst.Assign)
            values.append(assign.value)
        elif isinstance(parent, cst.AnnAssign) and parent.target is node:
            if parent.value is None:
                continue
            values.append(parent.value)
        elif _stored(rule, node):
            return None
    return values


def _function_of(rule: Rule, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The function whose local ``node`` is (a parameter belongs to the function it declares)."""
    return next((a for a in rule.ancestors(node) if isinstance(a, cst.FunctionDef)), None)


def _stored(rule: Rule, node: cst.CSTNode) -> bool:
    """Whether ``node`` is bound other than by a plain assignment (unpacking, a loop, ``as``, ``:=``, ``+=``)."""
    child, parent = node, rule.parent(node)
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        child, parent = parent, rule.parent(parent)
    if isinstance(parent, (cst.AssignTarget, cst.AsName)):
        return True
    if isinstance(parent, (cst.For, cst.CompFor, cst.AugAssign, cst.NamedExpr)):
        return getattr(parent, "target", None) is child
    return False
