"""End to end (slow): every sample in samples/ ported by ``porter migrate`` and checked ``--against``
its original. A port must exit 0: compiled graphs lowered (or known gaps), no graph breaks, no
recompiles after warm-up, no per-step host syncs, parity where the original can run here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from porter.cli import main

ROOT = Path(__file__).resolve().parents[2]
# Ports that keep per-step host syncs under NRN606 "fix this" markers, which no longer excuse a
# sync (issue 18): they fail the check until the host-sync rules move those syncs.
KNOWN_SYNCS = {"deit_engine": "MetricLogger.update() calls v.item() every step (NRN606 marker only)"}
SAMPLES = [
    pytest.param(p, id=p.stem, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_SYNCS[p.stem])] if p.stem in KNOWN_SYNCS else [])
    for p in sorted((ROOT / "samples").glob("*.py"))
]


@pytest.mark.slow
@pytest.mark.parametrize("sample", SAMPLES)
def test_ported_sample_checks_clean(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "ported"
    migrate = subprocess.run(
        [sys.executable, "-m", "porter", "migrate", str(sample), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    ported = out / sample.name
    assert ported.exists(), migrate.stdout + migrate.stderr
    report_path = tmp_path / "report.json"
    # porter's NRN412 marker says the port could not be given a compile: eager is then the port's
    # stated intent (nothing compiled is otherwise a failure of the check)
    eager = ["--allow-eager"] if "# porter: NRN412" in ported.read_text() else []
    code = main(["check", str(ported), "--against", str(sample), "--steps", "4", "--timeout", "600", *eager, "--json", str(report_path)])
    report = json.loads(report_path.read_text())
    summary = [(f["severity"], f["kind"], f["file"], f["line"], f["message"][:160]) for f in report["findings"]]
    assert report["crash"] is None, report["crash"]
    assert code == 0, summary
    for parity_pass in (report["parity"] or {}).get("passes", []):
        assert parity_pass["verdict"] == "match", parity_pass
