"""The device target (against a stand-in torch_neuronx) and the auto target's choice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from porter.check.orchestrate import real_device_available, resolve_target
from porter.cli import main

HERE = Path(__file__).parent


def test_device_target_reads_fallback_ops_and_dynamo_metrics(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYTHONPATH", str(HERE / "standin_device"))
    out = tmp_path / "report.json"
    code = main(["check", str(HERE / "scripts" / "device_cpu.py"), "--target", "device", "--steps", "3", "--json", str(out)])
    report = json.loads(out.read_text())
    assert report["target"] == "device"
    assert report["fallback_ops"] == ["aten::_fused_adam_"]
    assert report["dynamo_metrics"] and report["dynamo_metrics"][0]["graph_name"] == "model_0"
    assert "NEURON_CC_FLAGS" in report["device_env"] and "TORCH_NEURONX_DEBUG_DIR" in report["device_env"]
    assert report["steps_run"] == 3 and len(report["losses"]) == 3
    # the stand-in has no device: the run honestly says nothing reached it
    assert code == 1 and any(f["kind"] == "no-device" for f in report["findings"])


def test_auto_is_emulated_without_a_real_torch_neuronx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE / "standin_device"))
    # an importable torch_neuronx alone is not enough: auto also needs /dev/neuron0
    assert real_device_available() is False
    assert resolve_target("auto") == "emulated"
    assert resolve_target("device") == "device"


@pytest.mark.slow
def test_transformers_takes_its_trainium_branch() -> None:
    from conftest import check

    code, report = check("hf_bf16_args.py", "--steps", "3", "--allow-eager")
    assert report["crash"] is None, report["crash"]
    assert code == 0, report["findings"]
    assert report["steps_run"] == 3
    assert not any(f["kind"] == "no-device" for f in report["findings"])


@pytest.mark.slow
def test_two_process_ddp_runs_on_gloo() -> None:
    from conftest import check

    code, report = check("ddp_port.py", "--steps", "3", "--nproc", "2", "--allow-eager")
    assert report["crash"] is None, report["crash"]
    assert code == 0, report["findings"]
    assert any("ran on gloo" in n for n in report["notes"])
    assert any("['stopped', 'stopped']" in n for n in report["notes"])
