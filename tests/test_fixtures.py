"""Every fixture: expected port, expected findings, re-parse, idempotency, no-op byte identity."""

from __future__ import annotations

import dataclasses
import difflib

import libcst as cst
import pytest

from porter.engine.registry import all_rules
from porter.engine.results import Failure, Success, Unchanged
from tests.fixture_harness import FIXTURES, UPDATE, Case, cases, options_for, ported, read_findings

CASES = cases()


def _diff(expected: bytes, actual: bytes) -> str:
    return "".join(
        difflib.unified_diff(
            expected.decode(errors="replace").splitlines(True),
            actual.decode(errors="replace").splitlines(True),
            "expected",
            "actual",
        )
    )


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_fixture(case: Case) -> None:
    options = options_for(case)
    source = case.source.read_bytes()
    result = ported(source, case.source.name, options)
    assert not isinstance(result, Failure), result.reason
    actual = result.new if isinstance(result, Success) else source
    found = sorted((change.line, change.code) for change in getattr(result, "changes", ()))

    if UPDATE:
        if actual != source:
            case.expected.write_bytes(actual)
        elif case.expected.exists():
            case.expected.unlink()
        if found:
            case.findings.write_text("".join(f"{line} {code}\n" for line, code in found))
        elif case.findings.exists():
            case.findings.unlink()

    expected = case.expected.read_bytes() if case.expected.exists() else source
    assert actual == expected, "port differs from the fixture:\n" + _diff(expected, actual)
    assert found == read_findings(case)

    # The port re-parses, and porting it again changes nothing (idempotency).
    cst.parse_module(actual)
    again = ported(actual, case.source.name, options)
    assert isinstance(again, Unchanged), "second port changed the file:\n" + (
        _diff(actual, again.new) if isinstance(again, Success) else str(again)
    )


def test_every_rule_has_golden_noop_and_alias_fixtures() -> None:
    missing = []
    for rule in all_rules():
        folder = FIXTURES / rule.name
        names = [path.name for path in folder.glob("*.in.py")] if folder.is_dir() else []
        golden = [n for n in names if (folder / n.replace(".in.py", ".out.py")).exists() or (folder / n.replace(".in.py", ".findings")).exists()]
        if not golden:
            missing.append(f"{rule.name}: no golden case (.out.py or .findings)")
        if not any(name.startswith("noop") for name in names):
            missing.append(f"{rule.name}: no noop*.in.py case")
        if not any(name.startswith("alias") for name in names):
            missing.append(f"{rule.name}: no alias*.in.py case")
    assert not missing, "\n".join(missing)


def test_noop_cases_have_no_expected_output() -> None:
    for case in CASES:
        if case.stem.startswith("noop"):
            assert not case.expected.exists(), f"{case.id}: a no-op case must not have an .out.py"
            assert not read_findings(case), f"{case.id}: a no-op case must not have findings"


# No-op cases about the gate itself: files with no CUDA-ism, left alone because they are not being
# ported (the names say "cpu", or these two device-generic files).
_GATE_CASES = {"float64-on-device/noop_accelerator_device", "fp16-to-bf16/noop_probe_device_generic"}
_DECLINE_CASES = [case for case in CASES if case.stem.startswith("noop") and "cpu" not in case.stem and case.id not in _GATE_CASES]


@pytest.mark.parametrize("case", _DECLINE_CASES, ids=[case.id for case in _DECLINE_CASES])
def test_noop_cases_decline_with_the_performance_rules_on(case: Case) -> None:
    """A no-op case shows a rule declining only if the rule runs on it: performance rules run only on
    files being ported, so a case with no CUDA-ism would pass whatever the rule did. Each no-op case
    must also be left alone with the performance rules on for every file (``all_files``)."""
    options = dataclasses.replace(options_for(case), all_files=True)
    result = ported(case.source.read_bytes(), case.source.name, options)
    assert isinstance(result, Unchanged), f"{case.id}: changed with the performance rules on: " + str(
        [(change.line, change.code) for change in getattr(result, "changes", ())])
