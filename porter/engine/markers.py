"""``# porter: CODE message`` review markers, read from a file's text without parsing it (no libcst:
a fully cached run counts the markers of the files it serves from the cache). The verifier
(``porter.engine.verify``) reads the same syntax on a parsed tree."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

MARKER_CODE = re.compile(r"#\s*porter:\s*([A-Z]+[0-9]+)\b")


@dataclass(frozen=True)
class Marker:
    """One ``# porter: CODE message`` marker in an output file (``line`` of that output; in a
    notebook, of its cell, named in ``message``)."""

    line: int
    code: str
    message: str


@dataclass(frozen=True)
class FileMarkers:
    """The markers of one file's output (``porter.reports.markers.file_markers``): counted where
    the file was ported, with its bytes at hand, and cached with its result."""

    added: int  # markers this run added
    earlier: tuple[Marker, ...]  # markers an earlier run left, still in the output

    @property
    def total(self) -> int:
        return self.added + len(self.earlier)


def marker_comments(text: str, python: bool = True) -> list[tuple[int, str, str]]:
    """Every ``# porter: CODE message`` marker of a file's text as (line, code, message), read as
    ``porter.engine.verify.marker_codes`` reads them: Python comments only (tokenized: a string that holds the words is
    no marker); a file that is not Python, or does not tokenize, line by line."""
    if "porter:" not in text:
        return []
    found: list[tuple[int, str, str]] = []
    if python:
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type == tokenize.COMMENT and (match := MARKER_CODE.match(token.string)):
                    found.append((token.start[0], match.group(1), token.string[match.end():].strip()))
            return found
        except (tokenize.TokenError, SyntaxError):
            found = []
    for number, line in enumerate(text.splitlines(), 1):
        if match := MARKER_CODE.search(line):
            found.append((number, match.group(1), line[match.end():].strip()))
    return found
