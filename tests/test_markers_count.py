"""Every ``# porter:`` marker of the output counts in the summary and the reports: a second run over
a ported tree adds none, and "0 to review" there would be false (issue 17 §2)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from porter.cli import main
from porter.engine.markers import marker_comments
from porter.engine.results import Success
from porter.reports.markers import file_markers
from tests.fixture_harness import FIXTURES, Case, options_for, ported
from tests.test_reports import _schema

TRAIN = b"""import torch
model = torch.nn.Linear(2, 2).cuda()
torch.cuda.ipc_collect()
x = torch.randn(2, 2, device="cuda")
"""
# Nothing to port (the prefilter skips it unparsed), but a marker a human has not dealt with yet.
OLD = b'''import os
# porter: NRN104 torch.cuda.ipc_collect has no Neuron equivalent: remove it or port it by hand
def f():
    return os.getcwd()  # porter: NRN901 a trailing marker counts too
NOTE = "# porter: NRN101 a string, not a marker"
'''


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def _summary(err: str) -> str:
    return next(line for line in err.splitlines() if "Verifier:" in line)


def test_second_run_counts_the_markers_the_first_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_bytes(TRAIN)
    (tmp_path / "src" / "old.py").write_bytes(OLD)
    assert main(["migrate", "-q", str(tmp_path / "src"), "--out", str(tmp_path / "ported")]) == 0
    assert "3 markers to review (2 from an earlier run)" in _summary(capsys.readouterr().err)
    ported = (tmp_path / "ported" / "train.py").read_bytes()
    assert len(marker_comments(ported.decode())) == 1  # the NRN104 marker this run wrote

    reports = {ext: tmp_path / f"again.{ext}" for ext in ("json", "sarif", "md")}
    old_before = (tmp_path / "ported" / "old.py").stat()
    args = ["migrate", "-q", "--write", str(tmp_path / "ported"), *[f"--report={path}" for path in reports.values()]]
    assert main(args) == 0
    line = _summary(capsys.readouterr().err)
    assert "0 files ported" in line and "3 markers to review (3 from an earlier run)" in line
    after = (tmp_path / "ported" / "old.py").stat()
    assert (after.st_mtime_ns, after.st_ino) == (old_before.st_mtime_ns, old_before.st_ino)  # not rewritten
    assert (tmp_path / "ported" / "train.py").read_bytes() == ported

    data = json.loads(reports["json"].read_text())
    assert data["totals"]["markers"] == {"total": 3, "earlier": 3}
    assert data["repos"][0]["markers"] == {"total": 3, "earlier": 3}
    assert data["totals"]["effort"]["markers"] == 3 and data["totals"]["effort"]["score"] == 15
    files = {f["path"]: f for f in data["files"]}
    assert files["old.py"]["markers"] == 2 and [m["line"] for m in files["old.py"]["earlier_markers"]] == [2, 4]
    assert files["train.py"]["earlier_markers"][0]["code"] == "NRN104"

    sarif = json.loads(reports["sarif"].read_text())
    jsonschema.validate(sarif, _schema())
    results = sarif["runs"][0]["results"]
    assert sorted((r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in results) == [
        ("NRN104", "old.py"), ("NRN104", "train.py"), ("NRN901", "old.py")
    ]
    assert all(r["level"] == "warning" and r["properties"]["earlier"] for r in results)

    text = reports["md"].read_text()
    assert "## Markers from an earlier run" in text and "- [ ] `old.py:4` NRN901" in text
    assert "| 3 (3 earlier) |" in text and "Nothing to port." not in text


def test_marker_reading_is_the_verifiers() -> None:
    assert [(line, code) for line, code, _ in marker_comments(OLD.decode())] == [(2, "NRN104"), (4, "NRN901")]
    broken = "x = '''\n# porter: NRN101 in an unterminated string\n"  # not Python: read line by line
    assert [code for _, code, _ in marker_comments(broken)] == ["NRN101"]
    assert marker_comments("# porter: ignore[NRN101]\nx = 1\n") == []  # a suppression, not a marker


def test_notebook_markers_count(tmp_path: Path) -> None:
    from porter.engine.results import Unchanged

    cells = [{"cell_type": "markdown", "source": ["# porter: NRN101 prose\n"]},
             {"cell_type": "code", "source": ["import os\n", "# porter: NRN104 left earlier\n", "os.sync()\n"]}]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    found = file_markers(Unchanged(str(path)))
    assert [(m.line, m.code, m.message) for m in found.earlier] == [(2, "NRN104", "[cell 2] left earlier")]


def _writes_a_marker(source: Path) -> bool:
    expected = source.with_name(source.name.replace(".in.py", ".out.py"))
    return expected.exists() and b"# porter:" in expected.read_bytes()


MARKED = sorted(p for p in FIXTURES.glob("*/*.in.py") if _writes_a_marker(p))


@pytest.mark.parametrize("source", MARKED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_this_runs_markers_are_not_counted_as_earlier(source: Path) -> None:
    """Each marker the run adds is matched to the comment it wrote: only the input's own markers
    are an earlier run's (every fixture whose port writes a marker)."""
    result = ported(source.read_bytes(), source.name, options_for(Case(source)))
    assert isinstance(result, Success)
    found = file_markers(result)
    assert len(found.earlier) == len(marker_comments(source.read_text()))
    assert found.total == len(marker_comments(result.new_text))


def test_a_cached_rerun_counts_markers_without_libcst(tmp_path: Path) -> None:
    """The re-run over a ported tree, served from the cache, still needs no parser to count."""
    import subprocess
    import sys

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "train.py").write_bytes(TRAIN)
    (tmp_path / "t" / "old.py").write_bytes(OLD)
    args = ["-q", "--cache-dir", str(tmp_path / "c"), str(tmp_path / "t")]
    assert main(["migrate", *args]) == 0
    code = ("import sys\nfrom porter.commands.migrate import command\n"
            f"code = command.main({args!r}, standalone_mode=False)\nprint('libcst' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stdout + done.stderr
    assert "(2 from cache)" in done.stderr and "3 markers to review (2 from an earlier run)" in done.stderr


def test_a_cached_run_counts_the_markers_it_carries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The markers are counted where a file is ported and kept in its cache row: a warm run gives
    the same count and report entries without reading or tokenizing any output (issue 20: the
    main process tokenizing every cached output was 7.8 of a 9 s warm run on 800 files)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_bytes(TRAIN)
    (tmp_path / "src" / "old.py").write_bytes(OLD)
    cache = tmp_path / "cache"
    runs = []
    for _ in range(2):
        report = tmp_path / f"run{len(runs)}.json"
        args = ["migrate", "-q", "--cache-dir", str(cache), str(tmp_path / "src"), "--out", str(tmp_path / "ported"), f"--report={report}"]
        assert main(args) == 0
        runs.append((_summary(capsys.readouterr().err), json.loads(report.read_text())))
    (cold_line, cold), (warm_line, warm) = runs
    assert "3 markers to review (2 from an earlier run)" in cold_line and warm_line.replace(" (2 from cache)", "") == cold_line
    assert "(2 from cache)" in warm_line

    def earlier(report: dict) -> list:  # type: ignore[type-arg]
        return sorted((f["path"], m["line"], m["code"]) for f in report["files"] for m in f.get("earlier_markers", ()))

    assert earlier(warm) == earlier(cold) == [("old.py", 2, "NRN104"), ("old.py", 4, "NRN901")]


def test_a_cache_row_keeps_the_markers_counted() -> None:
    from porter.engine.markers import FileMarkers, Marker
    from porter.engine.results import Unchanged
    from porter.run.cache import content_digest, decode, encode

    digest = content_digest(OLD)
    marks = FileMarkers(0, (Marker(2, "NRN104", "torch.cuda.ipc_collect ..."),))
    row = encode("k", Unchanged("old.py", skipped="prefilter", marks=marks), digest)
    assert row is not None
    served = decode(row, "old.py", OLD, digest, "py")
    assert isinstance(served, Unchanged) and served.marks == marks
    assert file_markers(served) == marks
