"""One code catalogue: every code porter can emit has a summary, a safety and a documentation page,
and `porter explain` / `porter rules` serve exactly that catalogue."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from porter.cli import main
from porter.engine.registry import all_rules, catalogue, code_info
from porter.filetypes._codes import DOCS as FILE_DOCS

FIXTURES = Path(__file__).parent / "fixtures"
SECTIONS = ("What it does", "Why", "Before", "After", "Safety")


def test_catalogue_holds_every_rule_code_and_file_code() -> None:
    codes = set(catalogue())
    assert {code for rule in all_rules() for code in rule.all_codes()} <= codes
    assert set(FILE_DOCS) <= codes


@pytest.mark.parametrize("code", sorted(catalogue()))
def test_every_code_has_a_summary_and_a_documented_page(code: str) -> None:
    info = catalogue()[code]
    assert info.summary.strip()
    for section in SECTIONS:
        assert f"{section}:" in info.doc, f"{code}: its doc has no {section!r} section"


def test_codes_emitted_in_fixtures_are_catalogued() -> None:
    emitted: set[str] = set()
    for findings in FIXTURES.glob("**/*.findings"):
        emitted.update(re.findall(r"\bNRN\d{3}\b", findings.read_text()))
    for findings in (Path(__file__).parent / "fixtures_files").glob("**/*"):
        if findings.is_file():
            emitted.update(re.findall(r"porter: (NRN\d{3})", findings.read_text(errors="replace")))
    assert emitted, "no fixture findings found"
    missing = sorted(code for code in emitted if code_info(code) is None)
    assert not missing, f"emitted codes without a catalogue entry: {missing}"


def test_explain_prints_the_catalogue_page(capsys: pytest.CaptureFixture[str]) -> None:
    for code in ("NRN101", "NRN602", "NRN190"):  # a rule, an extra code, a file-type code
        assert main(["explain", code.lower()]) == 0
        out = capsys.readouterr().out
        info = catalogue()[code]
        assert out.startswith(info.title)
        assert info.doc.splitlines()[0] in out
    assert main(["explain", "NRN000"]) == 2


def test_rules_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert listed == list(catalogue())


def test_reports_describe_file_type_codes_too() -> None:
    from porter.reports.markdown import _summaries
    from porter.reports.sarif import _rules

    sarif = {rule["id"]: rule for rule in _rules()}
    for code in FILE_DOCS:
        assert sarif[code]["shortDescription"] == {"text": FILE_DOCS[code].summary}
        assert "What it does:" in sarif[code]["help"]["text"]  # type: ignore[index]
        assert _summaries()[code] == FILE_DOCS[code].summary
