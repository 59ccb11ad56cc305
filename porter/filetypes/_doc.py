"""A text file as lines, with pending edits in the original coordinates.

Every port of a non-Python file is a set of small, targeted edits — replace a span of one line,
comment a line out, delete it, insert lines before or after it — so comments, spacing and line
endings outside the edited spans stay byte-identical. Positions are those of the *original*
text (0-based lines and columns here, 1-based lines in the recorded ``Change``), so edits found
in any order compose: spans of one line are applied right to left.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from porter.engine.changes import Change, Kind, Safety
from porter.engine.options import Options

MARKER_WORD = "porter:"
_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")
BOM = "\ufeff"


class DecodeError(Exception):
    """The bytes are not a text file porter edits (binary, too large, not UTF-8)."""


def decode(data: bytes, max_size: int) -> tuple[str, str]:
    """``(text, encoding)``: UTF-8 (a BOM is kept in the text and written back as it was)."""
    if len(data) > max_size:
        raise DecodeError(f"file is {len(data):,} bytes, over the {max_size:,}-byte limit (--max-file-size)")
    if b"\x00" in data[:65536]:
        raise DecodeError("binary file (contains NUL bytes), not text")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as error:
        raise DecodeError(f"not valid utf-8 at byte {error.start}; re-encode the file as UTF-8") from None


def split_lines(text: str) -> list[tuple[str, str]]:
    """``(body, ending)`` per line; the last line may have no ending. ``''`` gives no lines."""
    lines = [(m.group(1), m.group(2)) for m in _LINE.finditer(text)]
    # The pattern matches once more at the very end (an empty body with no ending).
    if lines and lines[-1] == ("", ""):
        lines.pop()
    return lines


@dataclass
class Doc:
    """One file being ported: its lines and the edits pending on them."""

    path: str
    text: str
    options: Options
    comment: str = "#"
    lines: list[tuple[str, str]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    _spans: dict[int, list[tuple[int, int, str]]] = field(default_factory=lambda: defaultdict(list))
    _line_fns: dict[int, list[Callable[[str], str]]] = field(default_factory=lambda: defaultdict(list))
    _before: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    _after: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    _deleted: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.lines = split_lines(self.text)

    # ------------------------------------------------------------------ reading
    @property
    def newline(self) -> str:
        """The file's own line ending (its first one), used for inserted lines."""
        for _, ending in self.lines:
            if ending:
                return ending
        return "\n"

    @property
    def source(self) -> str:
        """The text without a BOM: what the parsers read, so their columns match ``body``."""
        return self.text[1:] if self.text.startswith(BOM) else self.text

    def body(self, index: int) -> str:
        """The original text of line ``index`` (0-based) without its ending (a BOM stripped)."""
        body = self.lines[index][0]
        return body[1:] if index == 0 and body.startswith(BOM) else body

    def __len__(self) -> int:
        return len(self.lines)

    def is_comment(self, index: int) -> bool:
        return self.body(index).lstrip().startswith(self.comment)

    def indent_of(self, index: int) -> str:
        body = self.body(index)
        return body[: len(body) - len(body.lstrip())]

    def touched(self, index: int) -> bool:
        return bool(self._spans.get(index) or self._line_fns.get(index) or index in self._deleted)

    # ------------------------------------------------------------------ edits
    def wants(self, code: str) -> bool:
        return self.options.selects(code)

    def record(
        self, index: int, column: int, code: str, message: str, safety: Safety, kind: Kind = Kind.EDIT
    ) -> None:
        self.changes.append(Change(code, message, self.path, index + 1, column, safety, kind))

    def replace_span(
        self, index: int, start: int, end: int, new: str, code: str, message: str | None, safety: Safety = Safety.SAFE
    ) -> bool:
        """Replace columns ``start:end`` of original line ``index`` (a helper edit when ``message`` is None)."""
        if not self.wants(code) or index in self._deleted:
            return False
        if any(s < end and start < e for s, e, _ in self._spans[index]):
            return False  # another edit already owns this text
        self._spans[index].append((start, end, new))
        if message is not None:
            self.record(index, start, code, message, safety)
        return True

    def edit_line(self, index: int, fn: Callable[[str], str], code: str, message: str | None, safety: Safety) -> bool:
        """Transform the whole (already span-edited) line; used to comment a line out."""
        if not self.wants(code) or index in self._deleted:
            return False
        self._line_fns[index].append(fn)
        if message is not None:
            self.record(index, len(self.indent_of(index)), code, message, safety)
        return True

    def delete_line(self, index: int, code: str, message: str | None, safety: Safety) -> bool:
        if not self.wants(code) or self.touched(index):
            return False
        self._deleted.add(index)
        if message is not None:
            self.record(index, 0, code, message, safety)
        return True

    def insert_before(self, index: int, bodies: list[str]) -> None:
        self._before[index].extend(bodies)

    def insert_after(self, index: int, bodies: list[str]) -> None:
        self._after[index].extend(bodies)

    # ------------------------------------------------------------------ markers
    def marker_text(self, code: str, message: str) -> str:
        return f"{self.comment} {MARKER_WORD} {code} {message}"

    def has_marker(self, index: int, code: str) -> bool:
        """Whether the comment lines right above ``index`` (or pending ones) carry ``code``."""
        needle = f"{MARKER_WORD} {code}"
        if any(needle in line for line in self._before.get(index, ())):
            return True
        above = index - 1
        while above >= 0 and self.is_comment(above):
            if needle in self.body(above):
                return True
            above -= 1
        return False

    def mark(self, index: int, code: str, message: str, indent: str | None = None, column: int | None = None) -> bool:
        """Add ``# porter: CODE message`` above line ``index``; idempotent per code."""
        if not self.wants(code) or self.has_marker(index, code):
            return False
        prefix = self.indent_of(index) if indent is None else indent
        self._before[index].append(prefix + self.marker_text(code, message))
        where = len(self.indent_of(index)) if column is None else column
        self.record(index, where, code, message, Safety.REVIEW, Kind.MARKER)
        return True

    # ------------------------------------------------------------------ result
    def render(self) -> str:
        out: list[str] = []
        newline = self.newline
        for index, (raw, ending) in enumerate(self.lines):
            bom = BOM if index == 0 and raw.startswith(BOM) else ""
            body = raw[len(bom) :]
            for extra in self._before.get(index, ()):
                out.append(bom + extra + newline)
                bom = ""
            if index not in self._deleted:
                for start, end, new in sorted(self._spans.get(index, ()), reverse=True):
                    body = body[:start] + new + body[end:]
                for fn in self._line_fns.get(index, ()):
                    body = fn(body)
                tail = self._after.get(index, ())
                out.append(bom + body + (ending or (newline if tail else "")))
            else:
                tail = self._after.get(index, ())
                if bom:
                    out.append(bom)
            out.extend(extra + newline for extra in tail)
        return "".join(out)

    def sorted_changes(self) -> tuple[Change, ...]:
        unique = {(c.line, c.column, c.code, c.message, c.kind): c for c in self.changes}
        return tuple(unique[key] for key in sorted(unique, key=lambda k: (k[0], k[1], k[2], k[3], str(k[4]))))
