"""The trigger-word prefilter never skips a file a rule would change.

(1) For every fixture and every sample, the rules whose triggers do *not* appear in the file,
run alone with the prefilter off and the performance rules forced on (``all_files``), change
nothing and report nothing: each rule's ``triggers`` checked against real code, rule by rule.
(2) Every file the prefilter skips (no trigger word; or only performance rules triggered in a
file not being ported) is unchanged with the prefilter off. (3) For the samples and the
integration fixtures (``_*`` folders), the whole port with the prefilter on equals the port
with it off: (1) and (2) imply it unless rules share facts through ``context.notes``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from porter.engine.options import Options
from porter.engine.registry import all_rules
from porter.engine.results import Failure, Success, Unchanged
from tests.fixture_harness import cases, options_for, ported

pytestmark = pytest.mark.corpus

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "samples").glob("*.py"))
FILES = sorted({case.source for case in cases()} | set(SAMPLES))
WHOLE = sorted(set(SAMPLES) | {case.source for case in cases() if case.folder.startswith("_")})


def _options(path: Path) -> Options:
    matching = [case for case in cases() if case.source == path]
    return options_for(matching[0]) if matching else Options()


def _outcome(result: object) -> tuple[object, ...]:
    if isinstance(result, Success):
        return ("changed", result.new, tuple((c.line, c.code, c.message) for c in result.changes))
    if isinstance(result, Failure):
        return ("failed", result.reason)
    return ("unchanged",)


@pytest.mark.parametrize("path", WHOLE, ids=[str(p.relative_to(ROOT)) for p in WHOLE])
def test_prefilter_on_and_off_agree(path: Path) -> None:
    data = path.read_bytes()
    options = _options(path)
    with_prefilter = ported(data, path.name, options.with_changes(prefilter=True))
    without = ported(data, path.name, options.with_changes(prefilter=False))
    assert _outcome(with_prefilter) == _outcome(without)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_untriggered_rules_change_nothing(path: Path) -> None:
    data = path.read_bytes()
    text = data.decode("utf-8")
    silent = [rule for rule in all_rules() if not rule.triggered_by(text)]
    if not silent:
        pytest.skip("every rule is triggered by this file")
    result = ported(data, path.name, Options(prefilter=False, all_files=True), rules=silent)
    assert isinstance(result, Unchanged), (
        f"rules {[r.code for r in silent]} were skipped by their triggers but change {path.name}: "
        + ", ".join(f"{c.code}@{c.line}" for c in getattr(result, "changes", ()))
        + (f" ({result.reason})" if isinstance(result, Failure) else "")
    )


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_files_the_prefilter_skips_are_unchanged_without_it(path: Path) -> None:
    # Covers both stages: no trigger word at all, and only performance rules triggered in a file
    # that is not being ported (their edits would be dropped, so the engine skips the parse).
    data = path.read_bytes()
    options = _options(path)
    result = ported(data, path.name, options.with_changes(prefilter=True))
    if not (isinstance(result, Unchanged) and result.skipped == "prefilter"):
        return
    assert _outcome(ported(data, path.name, options.with_changes(prefilter=False))) == ("unchanged",)
