"""The prefilter's second stage (``porter.engine.astcheck``) never skips a file porter would change
or report on.

For every fixture and sample: (1) the rules whose ``may_edit`` checks reject the file, run with
the prefilter off and the performance rules forced on (``all_files``), edit nothing — each check
a necessary condition of its rule's edits, on real code; (2) when ``verifier_may_find`` says no,
the verifier reports nothing on the file as it is; (3) the whole
port with the prefilter (both stages) on equals the port with it off: bytes, changes, findings.
Plus the stage's own behaviour: a file no check admits is not parsed by libcst and keeps its
bytes; a file CPython cannot parse goes the libcst way.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from porter.engine.astcheck import SourceFacts, admitted, verifier_may_find
from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.registry import all_rules
from porter.engine.results import Failure, Success, Unchanged
from tests.fixture_harness import cases, options_for, ported

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "samples").glob("*.py"))
FILES = sorted({case.source for case in cases()} | set(SAMPLES))
IDS = [str(path.relative_to(ROOT)) for path in FILES]
CHECKED = [rule for rule in all_rules() if "may_edit" in vars(rule)]


def _options(path: Path) -> Options:
    matching = [case for case in cases() if case.source == path]
    return options_for(matching[0]) if matching else Options()


def _outcome(result: object) -> tuple[object, ...]:
    if isinstance(result, Success):
        return ("changed", result.new, tuple((c.line, c.code, c.message) for c in result.changes), result.findings)
    if isinstance(result, Failure):
        return ("failed", result.reason)
    assert isinstance(result, Unchanged)
    return ("unchanged", result.findings)


def _facts(path: Path, options: Options) -> SourceFacts | None:
    text = path.read_bytes().decode("utf-8")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    return SourceFacts(text, tree, options)


def test_rules_declare_checks() -> None:
    assert {rule.code for rule in CHECKED} >= {"NRN731", "NRN711", "NRN203", "NRN821", "NRN851"}


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_rejecting_checks_are_necessary(path: Path) -> None:
    # The rules whose checks reject the file, run together with the prefilter off and the
    # performance rules forced on, edit nothing; and when the verifier's condition rejects it too,
    # the verifier reports nothing on it (one parse per file: the claim the stage relies on).
    options = Options(prefilter=False, all_files=True)
    facts = _facts(path, options)
    if facts is None:
        pytest.skip("CPython does not parse it: the libcst path")
    rejecting = [rule for rule in CHECKED if not rule.may_edit(facts)]
    result = ported(path.read_bytes(), path.name, options, rules=rejecting)
    assert not isinstance(result, Success), f"checks of {[r.code for r in rejecting]} reject {path.name} but they change it: " + ", ".join(
        f"{c.code}@{c.line}" for c in result.changes
    )
    if not verifier_may_find(facts):
        assert isinstance(result, Unchanged) and result.findings == ()


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_prefilter_on_and_off_agree(path: Path) -> None:
    data = path.read_bytes()
    options = _options(path)
    assert _outcome(ported(data, path.name, options)) == _outcome(ported(data, path.name, options.with_changes(prefilter=False)))


MODEL = '''\
import torch


class Block(torch.nn.Module):
    def forward(self, x):
        """Pads with padding="longest" (a docstring: no call)."""
        half_dim = x.shape[-1] // 2
        return x[:, :half_dim] * 2
'''


def test_a_file_no_check_admits_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    import porter.engine.core as core

    options = Options(repo_in_port=True)
    candidates = core.prefilter(MODEL, options, all_rules())
    assert candidates and not admitted(MODEL, ast.parse(MODEL), options, candidates)

    def no_libcst(data: bytes) -> None:
        raise AssertionError("libcst parse")

    monkeypatch.setattr(core, "parse_module", no_libcst)
    result = port_source(MODEL.encode(), "m.py", options)
    assert isinstance(result, Unchanged) and result.skipped == "ast-check" and result.findings == ()


def test_a_hazard_in_forward_is_admitted() -> None:
    text = MODEL.replace("return x[:, :half_dim] * 2", "return x[x > 0]")
    options = Options(repo_in_port=True)
    assert admitted(text, ast.parse(text), options, core_candidates(text, options))
    result = port_source(text.encode(), "m.py", options)
    assert isinstance(result, Success) and [c.code for c in result.changes] == ["NRN733"]


def test_code_cpython_rejects_goes_the_libcst_way() -> None:
    text = MODEL + "print 'python 2'\n"
    result = port_source(text.encode(), "m.py", Options(repo_in_port=True))
    assert isinstance(result, Failure) and result.kind == "parse"


def core_candidates(text: str, options: Options) -> list[type]:
    from porter.engine.core import prefilter

    return prefilter(text, options, all_rules())
