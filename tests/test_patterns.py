"""porter.engine.patterns: a trigger pattern searched branch by branch must answer exactly what
``re.search`` answers, on every rule's pattern and on patterns that stress the splitting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from porter.engine.patterns import _alternatives, searcher
from porter.engine.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
TEXTS = [path.read_text("utf-8", "replace") for path in sorted(ROOT.joinpath("samples").rglob("*.py"))[:80]] + [
    "", "x", "compile", "xcompile", "compile_x", "_compile", "a.compile(", "é compile", "écompile", "\ncompile\n",
    "double", "doubled", "a double", "float64", "def forward", "def\\\n forward", "deff forward", "padding = True",
    "padding=(\n'x'", "xpadding=True", "obj .\\\n pad ()", "train_dl", "DataLoader", "from transformers import x",
]
TRICKY = [
    r"\bcolou?r\b", r"\bab{2}c", r"[|a]b|c", r"a\|b|c", r"(a|b)c|\bd", r"[]|]x|y", r"[^]|]x|\by", r"\b|x", r"a||b",
    r"\bx(?:y|z)\b|w", r"(?i)abc|d", r"(a)\1|b", r"\.pad\b|\bpad", r"\b_x|\b9y", r"^\bfoo|bar$",
]


@pytest.mark.parametrize("pattern", sorted({rule.trigger_pattern for rule in all_rules() if rule.trigger_pattern}) + TRICKY)
def test_searcher_answers_as_re_search(pattern: str) -> None:
    search = searcher(pattern)
    compiled = re.compile(pattern)
    for text in TEXTS:
        assert search(text) == (compiled.search(text) is not None), (pattern, text[:60])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TRICKY + [r"\bcompile\b|x_y|\bdet\b", r"\bab|\bb\b|c"]), st.text(alphabet="abcdeiloprtxy_9 .|\n\\(é", max_size=30))
def test_searcher_on_random_text(pattern: str, text: str) -> None:
    assert searcher(pattern)(text) == (re.search(pattern, text) is not None)


def test_alternatives_split_at_top_level_only() -> None:
    assert _alternatives(r"a|(b|c)|[|d]|\||e") == ["a", "(b|c)", "[|d]", r"\|", "e"]
    assert _alternatives(r"[]|]|x") == ["[]|]", "x"]
