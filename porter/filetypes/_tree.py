"""One parse tree for YAML, JSON and TOML documents, with the source span of every node.

The config and dependency ports find keys in this tree and edit the *text* at the spans it
gives, so a change to one value never re-serialises the rest of the file. Spans are 0-based
``(line, column)`` pairs; ``end`` is exclusive. Only single-line scalars are edited.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

Pos = tuple[int, int]


class ParseError(Exception):
    """The document is not valid in its format (the file is then left alone)."""


@dataclass
class Node:
    kind: str  # "map" | "seq" | "scalar"
    start: Pos
    end: Pos
    value: object = None  # a scalar's Python value (str, int, float, bool, None)
    style: str = ""  # a scalar's quoting: "" (bare/plain), '"', "'", or a block/multi-line style
    items: list[tuple[Node, Node]] = field(default_factory=list)  # map: (key, value)
    elements: list[Node] = field(default_factory=list)  # seq
    flow: bool = False  # a YAML/TOML inline collection ({...} / [...]) rather than block layout

    @property
    def single_line(self) -> bool:
        return self.start[0] == self.end[0]

    def get(self, key: str) -> Node | None:
        for k, v in self.items:
            if k.value == key:
                return v
        return None

    def key_node(self, key: str) -> Node | None:
        for k, _ in self.items:
            if k.value == key:
                return k
        return None

    def keys(self) -> list[str]:
        return [str(k.value) for k, _ in self.items]


def walk_maps(node: Node, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Node]]:
    """Every mapping in the tree with its key path (sequence items add no key)."""
    if node.kind == "map":
        yield path, node
        for key, value in node.items:
            yield from walk_maps(value, (*path, str(key.value)))
    elif node.kind == "seq":
        for element in node.elements:
            yield from walk_maps(element, path)


class Positions:
    """Offsets in a text to ``(line, column)``; lines end at ``\\n``, ``\\r\\n`` or ``\\r``."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        index = 0
        while index < len(text):
            char = text[index]
            if char == "\r" and index + 1 < len(text) and text[index + 1] == "\n":
                index += 1
            if char in "\r\n":
                self.starts.append(index + 1)
            index += 1

    def at(self, offset: int) -> Pos:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, offset - self.starts[line]
