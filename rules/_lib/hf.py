"""Hugging Face helpers shared by the hf-* rules: literal values of keyword arguments, and which
``from_pretrained`` calls load a Transformers model."""

from __future__ import annotations

import re

import libcst as cst

from porter.engine.rule import Rule
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.tree import child_index

MISSING = object()


def literal(node: cst.BaseExpression) -> object:
    """The Python value of a literal (True/False/None, int, float, str), else ``MISSING``."""
    if isinstance(node, cst.Name) and node.value in {"True", "False", "None"}:
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal(node.expression)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else MISSING
    value = string_value(node)
    return MISSING if value is None else value


def has_double_star(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


# Receivers that are not models: their from_pretrained takes none of the keywords ported here.
_NOT_MODELS = re.compile(r"(Tokenizer\w*|Processor|FeatureExtractor|ImageProcessor\w*|Config|GenerationConfig)$")


def model_from_pretrained(rule: Rule, call: cst.Call) -> bool:
    """``X.from_pretrained(...)`` with ``X`` a Transformers model class (by qualified name)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "from_pretrained":
        return False
    names = rule.qualified(func.value)
    return any(name.startswith("transformers.") and not _NOT_MODELS.search(name) for name in names)


# ----------------------------------------------------------------------------- what built a receiver
# Libraries whose objects take the Hugging Face keywords porter inserts (generate's
# cache_implementation, a tokenizer's pad_to_multiple_of): peft/trl models wrap a transformers model.
HF_LIBRARIES = ("transformers.", "trl.", "peft.", "datasets.", "optimum.")
# Methods that return the same object (or the same model moved): followed to the receiver.
_SAME_OBJECT = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "bfloat16", "requires_grad_", "module"})
# Calls that return the model passed to them (Accelerate / peft / DDP-style wrappers).
_RETURNS_FIRST = frozenset({"unwrap_model", "prepare", "prepare_model", "get_peft_model"})

Origin = str  # "library" (transformers & co.), "own" (a class of the project), "unknown"


def origin(rule: Rule, node: cst.BaseExpression, depth: int = 6, seen: frozenset[str] = frozenset()) -> Origin:
    """Where the object ``node`` evaluates to was built, as far as the file shows: by a Hugging
    Face library (``AutoModelForCausalLM.from_pretrained(...)``, a ``PreTrainedModel``
    subclass, a parameter annotated with one), by a class of the project (its own
    ``generate()``), or not in view (a parameter, an attribute set from one)."""
    if depth <= 0:
        return "unknown"
    if isinstance(node, cst.Call):
        return _call_origin(rule, node, depth, seen)
    if isinstance(node, cst.Attribute) and node.attr.value == "module":
        return origin(rule, node.value, depth - 1, seen)  # DDP(model).module
    text = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    if not text:
        return "unknown"
    if any(name.startswith(HF_LIBRARIES) for name in rule.qualified(node)):
        return "library"  # a Hugging Face class itself (an annotation), or an object imported from one
    if text == "self":
        return _class_origin(rule, _enclosing(rule, node, cst.ClassDef))
    key = f"{text}@{id(_function_of(rule, node))}"  # a name per scope: build_tokenizer's own `tokenizer` differs
    if key in seen:
        return "cycle"  # model = accelerator.prepare(model): the other assignments decide
    values = _assigned(rule, node, text)
    found = {origin(rule, value, depth - 1, seen | {key}) if value is not None else "unknown" for value in values}
    found.discard("cycle")
    if len(found) != 1:
        return "unknown"
    return found.pop()


def _call_origin(rule: Rule, call: cst.Call, depth: int, seen: frozenset[str]) -> Origin:
    func = call.func
    names = rule.qualified(func)
    if any(name.startswith(HF_LIBRARIES) for name in names):
        return "library"
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        if method in _SAME_OBJECT:
            return origin(rule, func.value, depth - 1, seen)
        if method in _RETURNS_FIRST and call.args:
            return origin(rule, call.args[0].value, depth - 1, seen)
        if method in {"from_pretrained", "from_config"}:
            owner = rule.qualified(func.value)
            if any(name.startswith(HF_LIBRARIES) for name in owner):
                return "library"
            return _class_origin(rule, _class_named(rule, dotted(func.value)))
        return "unknown"
    if isinstance(func, cst.Name):
        if func.value in _RETURNS_FIRST and call.args:
            return origin(rule, call.args[0].value, depth - 1, seen)
        klass = _class_named(rule, func.value)
        if klass is not None:
            return _class_origin(rule, klass)
        builder = _function_named(rule, func.value)
        if builder is not None:  # tokenizer = build_tokenizer(...): what the file's function returns
            returns = [r for r in child_index(rule).find(builder, cst.Return) if _function_of(rule, r) is builder]
            found = {origin(rule, r.value, depth - 1, seen) if r.value is not None else "unknown" for r in returns}  # type: ignore[attr-defined]
            return found.pop() if len(found) == 1 else "unknown"
    return "unknown"


def _function_named(rule: Rule, name: str) -> cst.FunctionDef | None:
    for node in rule.context.module.body:
        if isinstance(node, cst.FunctionDef) and node.name.value == name:
            return node
    return None


def _class_origin(rule: Rule, klass: cst.ClassDef | None) -> Origin:
    """A class of the file: "library" when a base is a Hugging Face class, else "own"."""
    if klass is None:
        return "unknown"
    for base in klass.bases:
        if any(name.startswith(HF_LIBRARIES) for name in rule.qualified(base.value)):
            return "library"
    return "own"


def _class_named(rule: Rule, name: str | None) -> cst.ClassDef | None:
    if not name or "." in name:
        return None
    for node in child_index(rule).find(rule.context.module, cst.ClassDef):
        assert isinstance(node, cst.ClassDef)
        if node.name.value == name:
            return node
    return None


def _enclosing(rule: Rule, node: cst.CSTNode, kind: type[cst.CSTNode]) -> cst.ClassDef | None:
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, kind):
            return ancestor  # type: ignore[return-value]
    return None


def _assigned(rule: Rule, use: cst.CSTNode, text: str) -> list[cst.BaseExpression | None]:
    """Every value ``text`` may hold where ``use`` reads it (None for a parameter or loop target:
    any value; a parameter annotated with a Hugging Face class counts as one built by it).
    A plain name is looked up in the function that reads it, else at module level; ``self.x``
    in the whole class."""
    if text.startswith("self."):
        klass = _enclosing(rule, use, cst.ClassDef)
        return [value for node, value in _bindings(rule, text) if klass is not None and any(a is klass for a in rule.ancestors(node))]
    # The reading function, then the functions around it (a closure), then module level.
    scopes: list[cst.CSTNode | None] = [a for a in rule.ancestors(use) if isinstance(a, (cst.FunctionDef, cst.Lambda))]
    scopes.append(None)
    found = _bindings(rule, text)
    for scope in scopes:
        values = [value for node, value in found if _function_of(rule, node) is scope]
        if values:
            return values
    return []


def _function_of(rule: Rule, node: cst.CSTNode) -> cst.CSTNode | None:
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return ancestor
    return None


def _bindings(rule: Rule, text: str) -> list[tuple[cst.CSTNode, cst.BaseExpression | None]]:
    found: list[tuple[cst.CSTNode, cst.BaseExpression | None]] = []
    # The file's shared index (per-type buckets) instead of a libcst matcher walk, which rebuilds
    # every node of the file on each call (several calls per use origin() follows).
    for node in child_index(rule).find(rule.context.module, cst.Assign, cst.AnnAssign, cst.Param, cst.For, cst.WithItem):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if dotted(target.target) == text:
                    found.append((node, node.value))
                elif isinstance(target.target, (cst.Tuple, cst.List)) and text in _element_names(target.target):
                    found.append((node, None))
        elif isinstance(node, cst.AnnAssign) and dotted(node.target) == text:
            found.append((node, node.value if node.value is not None else node.annotation.annotation))
        elif isinstance(node, cst.Param) and node.name.value == text:
            annotation = node.annotation.annotation if node.annotation is not None else None
            found.append((node, annotation if annotation is not None and _hf_annotation(rule, annotation) else None))
        elif isinstance(node, cst.For) and text in _element_names(node.target):
            found.append((node, None))
        elif isinstance(node, cst.WithItem) and node.asname is not None and text in _element_names(node.asname.name):
            found.append((node, None))
    return found


def _hf_annotation(rule: Rule, annotation: cst.BaseExpression) -> bool:
    return any(name.startswith(HF_LIBRARIES) for name in rule.qualified(annotation))


def _element_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _element_names(element.value)}
    text = dotted(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
    return {text} if text else set()
