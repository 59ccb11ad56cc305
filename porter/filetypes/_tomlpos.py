"""A TOML reader that keeps the span of every key and value (``tomllib``/``tomlkit`` keep none).

It reads the TOML a project writes (tables, arrays of tables, dotted keys, strings of all four
kinds, numbers, booleans, dates as plain scalars, arrays over several lines with comments,
inline tables). The document is also checked with a real TOML parser (``tomllib``, else
``tomlkit``) so a file porter misreads is never edited: ``ParseError`` instead.
"""

from __future__ import annotations

import re

from porter.filetypes._tree import Node, ParseError, Positions

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BARE_VALUE = re.compile(r"[^\s,\]\}#]+")
_BASIC = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL = re.compile(r"'[^'\n]*'")


def check(text: str) -> None:
    """Raise ``ParseError`` if a real TOML parser rejects ``text``."""
    try:
        import tomllib

        loads = tomllib.loads
    except ImportError:  # Python 3.10
        try:
            import tomlkit

            loads = tomlkit.parse  # type: ignore[assignment]
        except ImportError:
            return
    try:
        loads(text)
    except Exception as error:  # each parser has its own error class
        raise ParseError(f"invalid TOML: {error}") from None


def parse(text: str) -> Node:
    check(text)
    return _Reader(text).document()


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = Positions(text)
        self.i = 1 if text.startswith("\ufeff") else 0
        self.root = Node("map", (0, 0), self.pos.at(len(text)))

    # ------------------------------------------------------------ helpers
    def at(self, offset: int) -> tuple[int, int]:
        return self.pos.at(offset)

    def skip_space(self) -> None:
        while self.i < len(self.text) and self.text[self.i] in " \t":
            self.i += 1

    def skip_blank(self) -> None:
        """Whitespace, newlines and comments (inside arrays and between statements)."""
        while self.i < len(self.text):
            char = self.text[self.i]
            if char in " \t\r\n":
                self.i += 1
            elif char == "#":
                while self.i < len(self.text) and self.text[self.i] not in "\r\n":
                    self.i += 1
            else:
                return

    def expect(self, char: str) -> None:
        self.skip_space()
        if not self.text.startswith(char, self.i):
            raise ParseError(f"expected {char!r} at {self.at(self.i)}")
        self.i += len(char)

    # ------------------------------------------------------------ structure
    def document(self) -> Node:
        table = self.root
        while True:
            self.skip_blank()
            if self.i >= len(self.text):
                return self.root
            if self.text.startswith("[[", self.i):
                self.i += 2
                keys = self.key_path()
                self.expect("]]")
                table = self.array_table(keys)
            elif self.text[self.i] == "[":
                self.i += 1
                keys = self.key_path()
                self.expect("]")
                table = self.table(self.root, keys)
            else:
                self.key_value(table)

    def table(self, start: Node, keys: list[Node]) -> Node:
        node = start
        for key in keys:
            child = node.get(str(key.value))
            if child is None:
                child = Node("map", key.start, key.end)
                node.items.append((key, child))
            elif child.kind == "seq" and child.elements:
                child = child.elements[-1]  # [[a]] then [a.b]: b belongs to the last a
            node = child
        return node

    def array_table(self, keys: list[Node]) -> Node:
        parent = self.table(self.root, keys[:-1])
        last = keys[-1]
        seq = parent.get(str(last.value))
        if seq is None:
            seq = Node("seq", last.start, last.end)
            parent.items.append((last, seq))
        entry = Node("map", last.start, last.end)
        seq.elements.append(entry)
        return entry

    def key_path(self) -> list[Node]:
        keys = [self.key()]
        while True:
            self.skip_space()
            if self.text.startswith(".", self.i):
                self.i += 1
                keys.append(self.key())
            else:
                return keys

    def key(self) -> Node:
        self.skip_space()
        start = self.i
        for pattern, style in ((_BASIC, '"'), (_LITERAL, "'"), (_BARE_KEY, "")):
            match = pattern.match(self.text, self.i)
            if match:
                self.i = match.end()
                raw = match.group()
                value = raw if not style else _unquote(raw, style)
                return Node("scalar", self.at(start), self.at(self.i), value=value, style=style)
        raise ParseError(f"expected a key at {self.at(start)}")

    def key_value(self, table: Node) -> None:
        keys = self.key_path()
        self.expect("=")
        self.skip_space()
        value = self.value()
        parent = self.table(table, keys[:-1])
        parent.items.append((keys[-1], value))

    # ------------------------------------------------------------ values
    def value(self) -> Node:
        start = self.i
        text = self.text
        for quote in ('"""', "'''"):
            if text.startswith(quote, start):
                end = text.find(quote, start + 3)
                while end != -1 and quote == '"""' and _escaped(text, end):
                    end = text.find(quote, end + 1)
                if end == -1:
                    raise ParseError(f"unterminated multi-line string at {self.at(start)}")
                while text.startswith(quote[0], end + 3):
                    end += 1  # up to two quotes may close the content
                self.i = end + 3
                return Node("scalar", self.at(start), self.at(self.i), value=None, style=quote)
        if text.startswith('"', start) or text.startswith("'", start):
            pattern, style = (_BASIC, '"') if text[start] == '"' else (_LITERAL, "'")
            match = pattern.match(text, start)
            if not match:
                raise ParseError(f"bad string at {self.at(start)}")
            self.i = match.end()
            return Node("scalar", self.at(start), self.at(self.i), value=_unquote(match.group(), style), style=style)
        if text.startswith("[", start):
            return self.array()
        if text.startswith("{", start):
            return self.inline_table()
        match = _BARE_VALUE.match(text, start)
        if not match:
            raise ParseError(f"expected a value at {self.at(start)}")
        raw = match.group()
        # A date-time may contain one space ("1979-05-27 07:32:00"); keep it whole.
        tail = re.match(r" \d{2}:\d{2}[^\s,\]\}#]*", text[match.end() :])
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw) and tail:
            raw += tail.group()
        self.i = start + len(raw)
        return Node("scalar", self.at(start), self.at(self.i), value=_bare(raw), style="")

    def array(self) -> Node:
        node = Node("seq", self.at(self.i), self.at(self.i), flow=True)
        self.i += 1
        while True:
            self.skip_blank()
            if self.text.startswith("]", self.i):
                self.i += 1
                node.end = self.at(self.i)
                return node
            node.elements.append(self.value())
            self.skip_blank()
            if self.text.startswith(",", self.i):
                self.i += 1
            elif not self.text.startswith("]", self.i):
                raise ParseError(f"expected ',' or ']' at {self.at(self.i)}")

    def inline_table(self) -> Node:
        node = Node("map", self.at(self.i), self.at(self.i), flow=True)
        self.i += 1
        while True:
            self.skip_space()
            if self.text.startswith("}", self.i):
                self.i += 1
                node.end = self.at(self.i)
                return node
            keys = self.key_path()
            self.expect("=")
            self.skip_space()
            value = self.value()
            self.table(node, keys[:-1]).items.append((keys[-1], value))
            self.skip_space()
            if self.text.startswith(",", self.i):
                self.i += 1
            elif not self.text.startswith("}", self.i):
                raise ParseError(f"expected ',' or '}}' at {self.at(self.i)}")


def _escaped(text: str, index: int) -> bool:
    backslashes = 0
    while index - backslashes - 1 >= 0 and text[index - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _unquote(raw: str, style: str) -> str:
    inner = raw[1:-1]
    if style == "'" or "\\" not in inner:
        return inner
    try:
        import json

        return json.loads('"' + inner + '"')
    except ValueError:
        return inner


def _bare(raw: str) -> object:
    if raw in ("true", "false"):
        return raw == "true"
    cleaned = raw.replace("_", "")
    try:
        return int(cleaned, 0) if not re.fullmatch(r"[+-]?0\d+", cleaned) else raw
    except ValueError:
        pass
    try:
        return float(cleaned)
    except ValueError:
        return raw
