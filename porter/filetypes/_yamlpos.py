"""YAML documents as span-carrying trees, through a real YAML composer.

ruamel.yaml (porter's ``config`` extra) is used when installed, else PyYAML; both expose the
composer's nodes with start and end marks, which is exactly what a targeted text edit needs.
Without either, YAML files are left alone (``YamlUnavailable``).
"""

from __future__ import annotations

from typing import Any

from porter.filetypes._tree import Node, ParseError

_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_NULL_TAG = "tag:yaml.org,2002:null"


class YamlUnavailable(Exception):
    """Neither ruamel.yaml nor PyYAML is installed."""


def parse_all(text: str) -> list[Node]:
    """Every document of a YAML stream (an empty stream gives none)."""
    composed = _compose_all(text)
    return [_convert(node) for node in composed if node is not None]


def _compose_all(text: str) -> list[Any]:
    try:
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError as RuamelError

        try:
            return list(YAML(typ="rt", pure=True).compose_all(text))
        except RuamelError as error:
            raise ParseError(f"invalid YAML: {_one_line(error)}") from None
    except ImportError:
        pass
    try:
        import yaml
    except ImportError:
        raise YamlUnavailable("no YAML parser: install porter-neuron[config] (ruamel.yaml)") from None
    try:
        return list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as error:
        raise ParseError(f"invalid YAML: {_one_line(error)}") from None


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())[:200]


def _convert(node: Any) -> Node:
    start = (node.start_mark.line, node.start_mark.column)
    end = (node.end_mark.line, node.end_mark.column)
    kind = type(node).__name__
    if kind == "MappingNode":
        items = [(_convert(k), _convert(v)) for k, v in node.value]
        return Node("map", start, end, items=items, flow=bool(node.flow_style))
    if kind == "SequenceNode":
        return Node("seq", start, end, elements=[_convert(v) for v in node.value], flow=bool(node.flow_style))
    style = node.style or ""
    return Node("scalar", start, end, value=_scalar(node.tag, node.value, style), style=style)


def _scalar(tag: Any, raw: str, style: str) -> object:
    tag = str(getattr(tag, "value", tag))  # ruamel wraps tags in a Tag object
    if style:
        return raw
    if tag == _BOOL_TAG:
        return raw.lower() in ("true", "yes", "on", "y")
    if tag == _INT_TAG:
        try:
            return int(raw.replace("_", ""), 0)
        except ValueError:
            return raw
    if tag == _FLOAT_TAG:
        try:
            return float(raw)
        except ValueError:
            return raw
    if tag == _NULL_TAG:
        return None
    return raw
