"""Hugging Face helpers shared by the hf-* rules: literal values of keyword arguments, and which
``from_pretrained`` calls load a Transformers model."""

from __future__ import annotations

import re

import libcst as cst

from porter.engine.rule import Rule
from porter.rules._lib.nodes import string_value

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
