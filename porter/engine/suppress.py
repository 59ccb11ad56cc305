"""Suppression comments: the changes a file's author asked porter not to make.

Spellings (codes are rule codes or prefixes, comma- or space-separated; none means every code)::

    x = y.cuda()  # noqa: NRN102        ruff/flake8 spelling: this statement (or this line)
    x = y.cuda()  # noqa                 every code on this statement
    # porter: ignore[NRN1,NRN203]        above a statement: that whole statement (a compound
    if torch.cuda.is_available():        statement with its body, its else/except branches and,
        ...                              above decorators, the decorated definition)
    # porter: skip-file                  in the first 20 lines: the file is left as it is

A directive on the first line of a statement covers the whole statement; on another line of a
multi-line statement, that line (and a code suppressed anywhere in a statement loses all its edits
there: a port is never half applied). ``# porter: ignore[...]`` trailing code acts as ``# noqa``. ``# noqa: E501`` (another tool's code) suppresses nothing here.

Everything is computed from the raw text: a regular expression finds candidate comments (a file
without one pays nothing more), then ``tokenize`` (a lexer, not a second parse) tells comments
from strings and gives the statements' lines and block depths.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

SKIP_FILE_LINES = 20
_CANDIDATE = re.compile(r"#[^\n]*?(?:\bnoqa\b|porter:\s*(?:ignore|skip-file))", re.IGNORECASE)
_NOQA = re.compile(r"#\s*noqa\b(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[,\s]+[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*porter:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_SKIP_FILE = re.compile(r"#\s*porter:\s*skip-file\b", re.IGNORECASE)
# Clauses that continue a compound statement at its own depth.
_CONTINUATIONS = {"else", "elif", "except", "finally"}

Codes = tuple[str, ...]  # () = every code


def skip_file(text: str) -> bool:
    """Whether ``# porter: skip-file`` is a comment in the first 20 lines of ``text``."""
    head = "\n".join(text.split("\n", SKIP_FILE_LINES)[:SKIP_FILE_LINES])
    return bool(_SKIP_FILE.search(head)) and any(_SKIP_FILE.search(comment) for comment, _, _ in _lex(head)[0])


def _codes(raw: str | None) -> Codes:
    return tuple(code.upper() for code in re.split(r"[,\s]+", raw or "") if code)


def _matches(code: str, codes: Codes) -> bool:
    return not codes or any(code.startswith(prefix) for prefix in codes)


@dataclass(frozen=True)
class _Statement:
    first: int
    last: int
    depth: int
    keyword: str  # its first token


def _lex(text: str) -> tuple[list[tuple[str, int, bool]], list[_Statement]]:
    """One ``tokenize`` pass: every comment (text, line, alone on its line) and every logical
    line (first and last physical lines, block depth, first token). An unfinished tail (a file
    cut short) keeps what was read."""
    comments: list[tuple[str, int, bool]] = []
    statements: list[_Statement] = []
    code_on: set[int] = set()  # lines holding code, to tell a comment alone on its line
    depth, start, keyword = 0, 0, ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = token.type
            if kind == tokenize.COMMENT:
                comments.append((token.string, token.start[0], token.start[0] not in code_on))
            elif kind == tokenize.INDENT:
                depth += 1
            elif kind == tokenize.DEDENT:
                depth -= 1
            elif kind == tokenize.NEWLINE:
                if start:
                    statements.append(_Statement(start, token.start[0], depth, keyword))
                start = 0
            elif kind not in (tokenize.NL, tokenize.ENDMARKER):
                code_on.update(range(token.start[0], token.end[0] + 1))
                if not start:
                    start, keyword = token.start[0], token.string
    except (tokenize.TokenError, SyntaxError):
        pass
    return comments, statements


@dataclass
class Suppressions:
    """The directives of one file; ``covers(code, line)`` says whether a change is suppressed."""

    lines: dict[int, list[Codes]] = field(default_factory=dict)  # line -> directives on it
    blocks: list[tuple[int, int, Codes]] = field(default_factory=list)  # (first, last, codes)
    first_of: dict[int, int] = field(default_factory=dict)  # physical line -> its statement's first

    @classmethod
    def of(cls, text: str, emitted: Collection[str] | None = None) -> Suppressions | None:
        """The directives in ``text``, or None when it has none (the common, cheap case).
        ``emitted``: the codes of the rules porting the file; None is then also the answer when no
        directive there can name one of them nor one of porter's own NRN codes (``inert``: a
        file's ``# noqa: F401`` lines are not lexed for nothing)."""
        if not _CANDIDATE.search(text):
            return None
        if emitted is not None and inert(text, emitted):
            return None
        found = cls()
        comments, statements = _lex(text)
        for statement in statements:
            for line in range(statement.first, statement.last + 1):
                found.first_of[line] = statement.first
        for comment, line, alone in comments:
            noqa, ignore = _NOQA.search(comment), _IGNORE.search(comment)
            if noqa:
                found.lines.setdefault(line, []).append(_codes(noqa.group("codes")))
            elif ignore and alone:
                span = _span_after(statements, line)
                if span:
                    found.blocks.append((*span, _codes(ignore.group("codes"))))
            elif ignore:
                found.lines.setdefault(line, []).append(_codes(ignore.group("codes")))
        return found if found.lines or found.blocks else None

    def covers(self, code: str, line: int) -> bool:
        """Whether a change with ``code`` at ``line`` (of the original) is suppressed."""
        for where in {line, self.first_of.get(line, line)}:
            if any(_matches(code, codes) for codes in self.lines.get(where, ())):
                return True
        return any(first <= line <= last and _matches(code, codes) for first, last, codes in self.blocks)

    def statement(self, line: int) -> int:
        """The first line of the statement ``line`` belongs to (to drop a suppressed change whole)."""
        return self.first_of.get(line, line)


def has_candidates(text: str) -> bool:
    """Whether ``text`` holds anything that may be a directive (in a comment or not)."""
    return _CANDIDATE.search(text) is not None


def inert(text: str, emitted: Collection[str]) -> bool:
    """Whether no directive of ``text`` can cover a change porter makes: every ``# noqa`` on a
    line that may hold a directive (comment or string alike: the answer errs towards False) names
    codes, and none of them is a prefix of one of ``emitted`` or of an NRN code (the engine's and
    the verifier's), and there is no ``# porter: ignore``. With such directives only, covers()
    is False for every code porter reports, so they change nothing the port does."""
    for candidate in _CANDIDATE.finditer(text):
        start = text.rfind("\n", 0, candidate.start()) + 1
        end = text.find("\n", candidate.end())
        line = text[start : len(text) if end == -1 else end]
        if _IGNORE.search(line):
            return False
        for noqa in _NOQA.finditer(line):
            codes = _codes(noqa.group("codes"))
            if not codes:
                return False  # a bare noqa covers every code
            for prefix in codes:
                if prefix.startswith("NRN") or "NRN".startswith(prefix) or any(code.startswith(prefix) for code in emitted):
                    return False
    return True


def _span_after(statements: list[_Statement], line: int) -> tuple[int, int] | None:
    """The lines of the statement after the comment at ``line``, with its body and clauses."""
    index = next((i for i, statement in enumerate(statements) if statement.first > line), None)
    if index is None:
        return None
    head = statements[index]
    end = index
    while statements[end].keyword == "@" and end + 1 < len(statements):  # decorators, then the def
        end += 1
    for later in statements[end + 1 :]:
        if later.depth > head.depth or (later.depth == head.depth and later.keyword in _CONTINUATIONS):
            end += 1
        else:
            break
    return head.first, statements[end].last


def drop_suppressed(items: Iterable[tuple[str, int]], suppressions: Suppressions) -> set[tuple[str, int]]:
    """The (code, statement line) pairs to drop: every change or edit of a suppressed code in a
    statement goes, so a port is never half applied on a line the author asked to keep."""
    return {(code, suppressions.statement(line)) for code, line in items if suppressions.covers(code, line)}
