"""``porter check`` as a user meets it: the stages as they happen, and one line without torch."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from porter.cli import main

SCRIPT = """import torch
m = torch.compile(torch.nn.Linear(4, 2).to("neuron"), backend="neuron")
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(5):
    loss = m(torch.ones(3, 4, device="neuron")).sum()
    loss.backward(); opt.step(); opt.zero_grad()
"""


@pytest.mark.check  # runs a script on the emulated device
def test_check_prints_its_stages_as_it_goes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    assert main(["check", str(script), "--steps", "2", "--target", "emulated", "--json", str(tmp_path / "r.json")]) == 0
    captured = capsys.readouterr()
    assert "| Dynamo             | yes |" in captured.out  # piped: plain text, ASCII boxes, no colour
    assert "\x1b[" not in captured.out and not any(0x2500 <= ord(c) < 0x2580 for c in captured.out)
    stages = [line for line in captured.err.splitlines() if line.startswith("porter check: ")]
    assert stages == [
        f"porter check: checking {script} (2 steps)",
        "porter check: the port: started (emulated)",
        "porter check: the port: compiling graph 1 (forward, 5 ops)",
        "porter check: the port: compiling graph 2 (backward, 6 ops)",
        "porter check: the port: step 1/2",
        "porter check: the port: step 2/2",
    ]


def test_check_without_torch_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert main(["check", str(script)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "torch is not installed" in err and "pip install 'porter-neuron[check]'" in err
