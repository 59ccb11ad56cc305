"""Optimizer facts shared by the optimizer rules (NRN501-NRN503, NRN511/NRN512): what Adam's
weight decay is, and the AdamW/foreach rewrites that keep the update identical."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import libcst as cst

from porter.engine.rule import FileAnalysis
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


# Where a function is compiled: torch.compile and the helpers that pass their arguments on to it.
_COMPILERS = ("torch.compile",)
_TENSOR_BUILDERS = frozenset({"torch.tensor", "torch.as_tensor", "torch.full", "torch.ones", "torch.zeros", "torch.scalar_tensor"})


def tensor_lr(rule: Rule, call: cst.Call) -> bool:
    """Whether the optimizer ``call`` builds takes its learning rate as a tensor it builds in place
    (``lr=torch.tensor(3e-4, device=device)``, torchrl's scripts, so a compiled update can anneal it).
    A name is not followed (a float, as a rule)."""
    arg = keyword(call, "lr") or positional(call, 1)
    return arg is not None and isinstance(arg.value, cst.Call) and bool(rule.qualified(arg.value.func) & _TENSOR_BUILDERS)


@dataclass
class CompiledSteps(FileAnalysis):
    """The optimizers the file steps inside a function it compiles: ``update = torch.compile(update)``,
    ``compile_with_warmup(update, ...)`` (the forwarders of ``rules/_tables/compile.py``), or a def
    decorated ``@torch.compile`` / ``@torch.compile(...)``, whose body calls ``X.step()`` on a name
    named like an optimizer (``looks_like_optimizer``). Dynamo does not trace a fused optimizer
    (torch 2.13 ``torch/_dynamo/eval_frame.py`` wraps every ``torch.optim`` ``_fused_*`` function in
    ``torch.compiler.disable``, "don't trace into fused optimizer"): such a step graph-breaks, where
    the default foreach path compiles into the graph. Heuristic: the compiled function is found by
    its name among the file's defs (any scope); ``X`` is followed to its construction by
    ``optimizers_held``; an ``X`` whose value the file does not show (``group_optimizers(a, b)``, a
    parameter) may hold any optimizer of the file (``anything``)."""

    anything: int | None = None  # the line of a compiled def stepping an optimizer not in view
    stepped: dict[int, int] = field(default_factory=dict)  # id(optimizer construction) -> compiled def's line

    def for_optimizer(self, call: cst.Call) -> int | None:
        """The line of the compiled function that steps the optimizer ``call`` builds, else None."""
        return self.stepped.get(id(call), self.anything)

    @classmethod
    def compute(cls, rule: Rule) -> CompiledSteps:
        from porter.rules._tables.compile import COMPILE_FORWARDERS

        index = child_index(rule)
        module = rule.context.module
        compilers = (*_COMPILERS, *COMPILE_FORWARDERS)
        defs: dict[str, list[cst.FunctionDef]] = {}
        compiled: list[cst.FunctionDef] = []
        for node in index.find(module, cst.FunctionDef):
            assert isinstance(node, cst.FunctionDef)
            defs.setdefault(node.name.value, []).append(node)
            for decorator in node.decorators:
                target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
                if rule.matches(target, *_COMPILERS):
                    compiled.append(node)
        for node in index.find(module, cst.Call):
            assert isinstance(node, cst.Call)
            first = node.args[0].value if node.args and not node.args[0].keyword and not node.args[0].star else None
            if isinstance(first, cst.Name) and first.value in defs and rule.matches(node.func, *compilers):
                compiled.extend(defs[first.value])
        result = cls()
        for function in compiled:
            line = rule.position(function)[0]
            for node in index.find(function, cst.Call):
                assert isinstance(node, cst.Call)
                func = node.func
                if not (isinstance(func, cst.Attribute) and func.attr.value == "step" and looks_like_optimizer(func.value)):
                    continue
                held = optimizers_held(rule, func.value)
                if held is None:
                    result.anything = line if result.anything is None else result.anything
                    continue
                for construction in held:
                    result.stepped.setdefault(id(construction), line)
        return result
