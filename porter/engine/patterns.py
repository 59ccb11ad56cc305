"""A rule's trigger pattern searched as exactly ``re.search(pattern, text) is not None``, faster.

The prefilter searches every file's whole text for each candidate rule's pattern. Python's ``re``
finds a pattern that starts with a literal by a fast scan for that literal; an alternation, or a
branch that starts with ``\\b``, is instead tried at every position of the text (several times
slower: a tenth of a bare parse on the files that reach libcst). So the pattern's top-level
alternatives are searched one by one (the text matches when one of them does): a plain literal
with ``in``, a ``\\b`` before a word literal as the literal followed by a look-behind that says the
same (``\\bcompile`` is ``compile(?<!\\wcompile)``: the character before it is not a word
character, or there is none), anything else as it is. A pattern this cannot split exactly (a
backreference, an inline flag) is searched whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

_UNSPLITTABLE = re.compile(r"\\[1-9]|\(\?P=|\(\?[aiLmsux]")
_WORD_LITERAL = re.compile(r"\\b([A-Za-z0-9_]+)")
_QUANTIFIERS = ("*", "+", "?", "{")
_LITERAL_ESCAPE = re.compile(r"\\([^A-Za-z0-9])")
_META = frozenset(".^$*+?{}[]|()\\")


def _alternatives(pattern: str) -> list[str]:
    """``pattern``'s top-level alternatives (outside groups and character classes)."""
    found: list[str] = []
    depth, start, at, in_class = 0, 0, 0, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            at += 1 + (pattern[at + 1 : at + 2] == "^")
            if pattern[at : at + 1] == "]":  # a ']' first in a class is a literal
                at += 1
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            found.append(pattern[start:at])
            start = at + 1
        at += 1
    found.append(pattern[start:])
    return found


def _literal(branch: str) -> str | None:
    """The text ``branch`` matches when it is a plain literal (escaped punctuation allowed)."""
    plain = _LITERAL_ESCAPE.sub("", branch)
    if any(char in _META for char in plain):
        return None
    return _LITERAL_ESCAPE.sub(r"\1", branch)


def _literal_first(branch: str) -> str:
    """``branch`` with a leading ``\\b`` before a word literal moved behind it as a look-behind."""
    match = _WORD_LITERAL.match(branch)
    if match is None:
        return branch
    word, rest = match.group(1), branch[match.end() :]
    if rest.startswith(_QUANTIFIERS):  # the quantifier binds the literal's last character
        word, rest = word[:-1], word[-1] + rest
    if not word:
        return branch
    return f"{word}(?<!\\w{word}){rest}"


@lru_cache(maxsize=256)
def searcher(pattern: str) -> Callable[[str], bool]:
    """A test of a text: ``re.search(pattern, text) is not None``."""
    whole = re.compile(pattern)
    if _UNSPLITTABLE.search(pattern):
        return lambda text: whole.search(text) is not None
    words: list[str] = []
    searches: list[Callable[[str], re.Match[str] | None]] = []
    for branch in _alternatives(pattern):
        literal = _literal(branch)
        if literal is not None:
            words.append(literal)
        else:
            searches.append(re.compile(_literal_first(branch)).search)
    # Literals first, then literal-first branches, then the rest: the cheapest answer first.
    searches.sort(key=lambda search: not _starts_with_literal(search))

    def search(text: str) -> bool:
        return any(word in text for word in words) or any(found(text) is not None for found in searches)

    return search


def _starts_with_literal(search: Callable[[str], object]) -> bool:
    pattern: str = search.__self__.pattern  # type: ignore[attr-defined]
    return bool(pattern) and pattern[0] not in _META
