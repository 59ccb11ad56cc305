"""``# porter: CODE message`` review markers, read from a file's text without parsing it (no libcst:
a fully cached run counts the markers of the files it serves from the cache). The verifier
(``porter.engine.verify``) reads the same syntax on a parsed tree."""

from __future__ import annotations

import io
import re
import tokenize

MARKER_CODE = re.compile(r"#\s*porter:\s*([A-Z]+[0-9]+)\b")


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
