"""Distributed scripts on the emulated device (--nproc 2): the `neuron` collective backend, DDP,
FSDP2, mp.spawn launchers, and TorchNeuron's distributed rules. Each run takes 10-30 s."""

from __future__ import annotations

import pytest
from conftest import SCRIPTS, check, findings, marked_line

from porter.check.runner import spawns_ranks


def _clean(code: int, report: dict) -> None:
    assert report["crash"] is None, report["crash"]
    assert code == 0, [(f["kind"], f["message"][:200]) for f in report["findings"]]


def test_device_id_default_backend_and_accelerator_index() -> None:
    code, report = check("dist_device_id.py", "--steps", "3", "--nproc", "2")
    _clean(code, report)
    assert report["steps_run"] == 3 and len(report["losses"]) == 3
    assert any("`neuron` collective backend ran on gloo" in n for n in report["notes"])
    assert any("['stopped', 'stopped']" in n for n in report["notes"])
    assert all(g["status"] == "lowered" for g in report["graphs"]) and report["graphs"]


def test_fsdp2_fully_shard_trains() -> None:
    code, report = check("dist_fsdp2.py", "--steps", "3", "--nproc", "2")
    assert report["crash"] is None, report["crash"]
    assert report["steps_run"] == 3 and len(report["losses"]) == 3
    assert any("DeviceMesh('neuron') ran as a CPU mesh" in n for n in report["notes"])
    # FSDP2's own buffers are not the script's device mixing
    assert not findings(report, "device-mixing") and not findings(report, "no-device")
    assert report["graphs"], "the compiled model's graphs reached the backend"


def test_mp_spawn_children_get_the_emulation() -> None:
    assert spawns_ranks(str(SCRIPTS / "dist_spawn.py")) and not spawns_ranks(str(SCRIPTS / "dist_device_id.py"))
    code, report = check("dist_spawn.py", "--steps", "3", "--nproc", "2")
    _clean(code, report)  # before: "Unknown backend type neuron" in every child
    assert report["steps_run"] == 3 and len(report["losses"]) == 3 and report["graphs"]
    assert any("2 rank(s) spawned by the script" in n for n in report["notes"])


@pytest.mark.slow
def test_mp_spawn_port_matches_its_cuda_original() -> None:
    # the original: nccl, torch.cuda.device_count() == 2, model.to(rank), DDP(device_ids=[rank])
    code, report = check("dist_spawn.py", "--against", str(SCRIPTS / "dist_spawn_cuda.py"), "--steps", "3", "--nproc", "2")
    _clean(code, report)
    assert report["verdict"] == "compiled and matched"
    assert [p["verdict"] for p in report["parity"]["passes"]] == ["match", "match"]


def test_runtime_started_before_init_process_group_fails_as_on_the_device() -> None:
    code, report = check("dist_strict.py", "--steps", "1", "--nproc", "2", "--", "--tensor-first")
    assert code == 2
    assert "Neuron runtime should not be initialized before the init_process_group." in report["crash"]["message"]
    assert report["crash"]["line"] == marked_line("dist_strict.py", "INIT-LINE")


def test_more_than_one_core_per_rank_fails_as_on_the_device() -> None:
    code, report = check("dist_strict.py", "--steps", "1", "--nproc", "2", "--", "--cores")
    assert code == 2
    assert "more than one device per process" in report["crash"]["message"]


def test_dtensor_tensor_parallel_trains() -> None:
    code, report = check("dist_dtensor.py", "--steps", "3", "--nproc", "2", "--allow-eager")
    _clean(code, report)
    assert report["steps_run"] == 3 and len(report["losses"]) == 3
    assert any("DeviceMesh('neuron') ran as a CPU mesh" in n for n in report["notes"])
