"""Activation checkpointing on the emulated device: the recompute's metadata check."""

from __future__ import annotations

from conftest import SCRIPTS, check


def test_checkpointed_compiled_block_matches_original() -> None:
    # Without checkpoint_meta's patch the port and the original crashed in the backward
    # (CheckpointError: a saved tensor read `neuron`/`cuda`, its recompute `cpu`).
    code, report = check("checkpointed_compiled.py", "--against", str(SCRIPTS / "checkpointed_compiled_cuda.py"),
                         "--steps", "3")
    assert report["crash"] is None, report["crash"]
    assert code == 0, report["findings"]
    assert [p["verdict"] for p in report["parity"]["passes"]] == ["match", "match"]
    assert report["graphs"] and all(g["status"] == "lowered" for g in report["graphs"])
