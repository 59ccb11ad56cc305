"""A JSON parser that keeps the span of every value (``json`` keeps none).

Strict JSON (RFC 8259): a document ``json.loads`` rejects is rejected here too, so porter never
edits a file it cannot verify afterwards.
"""

from __future__ import annotations

import json
import re

from porter.filetypes._tree import Node, ParseError, Positions

_WS = re.compile(r"[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')


def parse(text: str) -> Node:
    body = text[1:] if text.startswith("\ufeff") else text
    offset = len(text) - len(body)
    try:
        json.loads(body)
    except ValueError as error:
        raise ParseError(f"invalid JSON: {error}") from None
    parser = _Parser(text, Positions(text))
    node, end = parser.value(parser.skip(offset))
    if parser.skip(end) != len(text):
        raise ParseError("trailing data after the JSON document")
    return node


class _Parser:
    def __init__(self, text: str, positions: Positions) -> None:
        self.text = text
        self.pos = positions

    def skip(self, index: int) -> int:
        match = _WS.match(self.text, index)
        return match.end() if match else index

    def value(self, index: int) -> tuple[Node, int]:
        char = self.text[index : index + 1]
        if char == "{":
            return self.obj(index)
        if char == "[":
            return self.arr(index)
        if char == '"':
            return self.string(index)
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, index):
                return self.scalar(index, index + len(word), value), index + len(word)
        match = _NUMBER.match(self.text, index)
        if not match:
            raise ParseError(f"unexpected character at {self.pos.at(index)}")
        number = json.loads(match.group())
        return self.scalar(index, match.end(), number), match.end()

    def scalar(self, start: int, end: int, value: object, style: str = "") -> Node:
        return Node("scalar", self.pos.at(start), self.pos.at(end), value=value, style=style)

    def string(self, index: int) -> tuple[Node, int]:
        match = _STRING.match(self.text, index)
        if not match:
            raise ParseError(f"bad string at {self.pos.at(index)}")
        return self.scalar(index, match.end(), json.loads(match.group()), '"'), match.end()

    def obj(self, index: int) -> tuple[Node, int]:
        node = Node("map", self.pos.at(index), self.pos.at(index))
        index = self.skip(index + 1)
        if self.text[index] == "}":
            node.end = self.pos.at(index + 1)
            return node, index + 1
        while True:
            key, index = self.string(self.skip(index))
            index = self.skip(index)
            if self.text[index] != ":":
                raise ParseError(f"expected ':' at {self.pos.at(index)}")
            value, index = self.value(self.skip(index + 1))
            node.items.append((key, value))
            index = self.skip(index)
            if self.text[index] == ",":
                index += 1
                continue
            if self.text[index] == "}":
                node.end = self.pos.at(index + 1)
                return node, index + 1
            raise ParseError(f"expected ',' or '}}' at {self.pos.at(index)}")

    def arr(self, index: int) -> tuple[Node, int]:
        node = Node("seq", self.pos.at(index), self.pos.at(index))
        index = self.skip(index + 1)
        if self.text[index] == "]":
            node.end = self.pos.at(index + 1)
            return node, index + 1
        while True:
            element, index = self.value(self.skip(index))
            node.elements.append(element)
            index = self.skip(index)
            if self.text[index] == ",":
                index += 1
                continue
            if self.text[index] == "]":
                node.end = self.pos.at(index + 1)
                return node, index + 1
            raise ParseError(f"expected ',' or ']' at {self.pos.at(index)}")
