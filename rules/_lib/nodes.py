"""Reading and building small libcst nodes: literals, dotted names, method names."""

from __future__ import annotations

from ast import literal_eval
from functools import lru_cache

import libcst as cst
import libcst.matchers as m


@lru_cache(maxsize=2048)
def _evaluated(literal: str) -> object:
    """``SimpleString.evaluated_value`` of a literal spelled ``literal`` (libcst runs
    ``ast.literal_eval``, a parse and a compile, at every read: the rules read the same few
    literals thousands of times per file)."""
    return literal_eval(literal)


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if type(node) is cst.SimpleString and "b" not in node.prefix.lower() and "f" not in node.prefix.lower():
        value = _evaluated(node.value)
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        joined = node.evaluated_value
        return joined if isinstance(joined, str) else None
    return None


def with_string_value(node: cst.SimpleString, value: str) -> cst.SimpleString:
    """A copy of ``node`` holding ``value``, keeping its prefix and quote style."""
    quote = node.quote
    body = value.replace("\\", "\\\\").replace(quote[0], "\\" + quote[0]) if len(quote) == 1 else value
    return node.with_changes(value=f"{node.prefix}{quote}{body}{quote}")


def method_name(call: cst.Call) -> str | None:
    """``x.foo(...)`` -> ``"foo"``."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def dotted(node: cst.CSTNode) -> str | None:
    """``a.b.c`` as text for Name/Attribute chains, else None."""
    # Exact types (neither class has subclasses): a failed isinstance on a libcst ABC is slow.
    if type(node) is cst.Name:
        return node.value  # type: ignore[attr-defined]
    if type(node) is cst.Attribute:
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def parse_expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


IS_CALL = m.Call()


def is_docstring(statement: cst.CSTNode) -> bool:
    """A statement that is a string alone (the docstring, when it comes first in a body)."""
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))
