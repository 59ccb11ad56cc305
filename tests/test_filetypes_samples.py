"""The sample repository ``samples/repo``: every non-Python file ports with the expected changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from porter.engine.options import Options
from porter.engine.results import Success, Unchanged
from porter.filetypes import handles, port_file

REPO = Path(__file__).parent.parent / "samples" / "repo"

# file -> the codes its port must report (as a sorted multiset of codes).
EXPECTED: dict[str, list[str]] = {
    "requirements.txt": ["NRN990", "NRN990", "NRN991", "NRN992", "NRN993", "NRN994", "NRN994", "NRN995"],
    "launch.sh": ["NRN191", "NRN191", "NRN196", "NRN390", "NRN390", "NRN391", "NRN392"],
    "configs/accelerate.yaml": ["NRN290", "NRN391", "NRN394"],
    "configs/ds_config.json": ["NRN291"],
    "configs/train.yaml": ["NRN194", "NRN292", "NRN393"],
    "Dockerfile": ["NRN190", "NRN193"],
    "pyproject.toml": ["NRN990", "NRN991", "NRN992", "NRN993", "NRN994"],
}


def _files() -> list[Path]:
    return sorted(p for p in REPO.rglob("*") if p.is_file())


def test_every_non_python_file_of_the_sample_is_handled() -> None:
    handled = {p.relative_to(REPO).as_posix() for p in _files() if handles(str(p))}
    assert handled == set(EXPECTED)
    assert not handles(str(REPO / "train.py"))  # the Python engine owns it


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_file_ports(name: str) -> None:
    path = REPO / name
    data = path.read_bytes()
    result = port_file(str(path), data, Options())
    assert isinstance(result, Success), result
    assert sorted(change.code for change in result.changes) == EXPECTED[name]
    assert result.new != data
    again = port_file(str(path), result.new, Options())
    assert isinstance(again, Unchanged), f"second run of {name} changed it again"


def _ported(name: str) -> str:
    path = REPO / name
    result = port_file(str(path), path.read_bytes(), Options())
    assert isinstance(result, Success)
    return result.new_text


def test_ported_configs_read_as_neuron_settings() -> None:
    import yaml

    train = yaml.safe_load(_ported("configs/train.yaml"))
    assert (train["device"], train["precision"], train["dist_backend"]) == ("neuron", "bf16-mixed", "neuron")
    assert train["logging"] == {"every": 1, "dir": "./runs"}
    accelerate = yaml.safe_load(_ported("configs/accelerate.yaml"))
    assert accelerate["mixed_precision"] == "bf16"
    deepspeed = json.loads(_ported("configs/ds_config.json"))
    assert deepspeed["bf16"] == {"enabled": True}
    assert deepspeed["fp16"]["enabled"] is False


def test_ported_requirements_pin_a_torch_neuronx_family() -> None:
    lines = [line.split("#")[0].strip() for line in _ported("requirements.txt").splitlines()]
    assert "torch==2.14.0" in lines and "torch-neuronx==2.14.*" in lines
    assert "--extra-index-url https://pip.repos.neuron.amazonaws.com" in lines
    assert not any("cu121" in line for line in lines)
    assert "flash-attn==2.5.8" not in lines  # commented out


def test_ported_launcher_uses_torchrun() -> None:
    text = _ported("launch.sh")
    assert "torch.distributed.launch" not in text and "--use_env" not in text
    assert "torchrun \\\n    --nproc_per_node=${NGPUS}" in text
    # A job-wide multi-core value would make every torchrun rank fail (one core per process).
    assert "# export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in text and "NEURON_RT_VISIBLE_CORES=" not in text


def test_the_python_of_the_sample_ports_too() -> None:
    """The whole repository ports: train.py through the Python engine (its changes are the rules')."""
    from porter.engine.core import port_source

    path = REPO / "train.py"
    result = port_source(path.read_bytes(), str(path), Options())
    assert isinstance(result, Success)
    assert ".cuda()" not in result.new_text and "torch.cuda" not in result.new_text
    # The scaler is enabled from the user's precision option ("16-mixed" is float16 in Lightning's
    # spelling, and a user may still pass it): it stays, on neuron, with the NRN206 advice.
    assert 'GradScaler("neuron", enabled=use_amp)' in result.new_text
    assert "porter: NRN206 GradScaler kept" in result.new_text
