"""End to end: a real `porter check --json` report of a ported sample becomes a model card that
`porter gate` accepts for an emulated verification and refuses for a device one."""

from __future__ import annotations

from pathlib import Path

import pytest

from porter.cli import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_card_round_trip_from_a_real_check_report(tmp_path: Path) -> None:
    ported = tmp_path / "ported"
    assert main(["migrate", str(ROOT / "samples" / "mlp_alias.py"), "--out", str(ported), "-q", "--no-cache"]) == 0
    report = tmp_path / "report.json"
    assert main(["check", str(ported / "mlp_alias.py"), "--steps", "3", "--json", str(report)]) == 0
    model = tmp_path / "model"
    model.mkdir()
    (model / "README.md").write_text("---\nlicense: apache-2.0\n---\n# tiny mlp\n\nTrained on synthetic data.\n")
    assert main(["card", str(report), str(model)]) == 0
    first = (model / "README.md").read_bytes()
    assert b"neuron-emulated" in first and b"Hardware compatibility" in first
    assert b"# tiny mlp\n\nTrained on synthetic data.\n" in first
    assert main(["card", str(report), str(model)]) == 0
    assert (model / "README.md").read_bytes() == first  # idempotent
    assert main(["gate", str(model), "--require", "neuron"]) == 0
    assert main(["gate", str(model), "--require", "neuron", "--require-device"]) == 1
