"""Parity against hand-ported CUDA originals: fp32 semantic pass and bf16 precision pass."""

from __future__ import annotations

import pytest
from conftest import SCRIPTS, check

from porter.check import parity


def test_mlp_amp_gradscaler_port_matches_original() -> None:
    code, report = check("mlp_ported.py", "--against", str(SCRIPTS / "mlp_cuda.py"), "--steps", "4")
    assert code == 0, report["findings"]
    semantic, precision = report["parity"]["passes"]
    assert semantic["verdict"] == "match" and semantic["tolerance_name"] == "SEMANTIC_RTOL_COMPILED"
    assert len(semantic["port_losses"]) == 4 == len(semantic["original_losses"])
    assert semantic["max_rel_delta"] <= parity.SEMANTIC_RTOL_COMPILED
    assert precision["verdict"] == "match" and precision["rtol"] == parity.PRECISION_RTOL
    # bf16 vs fp16 really differ: the precision pass is not the semantic pass again
    assert precision["max_rel_delta"] > 0
    assert any("dropout disabled" in n for n in report["parity"]["notes"])


@pytest.mark.slow
def test_cnn_port_matches_original() -> None:
    code, report = check("cnn_ported.py", "--against", str(SCRIPTS / "cnn_cuda.py"), "--steps", "4")
    assert code == 0, report["findings"]
    assert all(p["verdict"] == "match" for p in report["parity"]["passes"])
    assert all(g["status"] == "lowered" for g in report["graphs"])  # conv + pool backward close


@pytest.mark.slow
def test_mismatched_port_fails_parity() -> None:
    code, report = check("cnn_ported.py", "--against", str(SCRIPTS / "mlp_cuda.py"), "--steps", "3")
    assert code == 1
    assert any(f["kind"] == "parity" and f["severity"] == "error" for f in report["findings"])


@pytest.mark.slow
def test_original_that_cannot_run_gives_no_verdict() -> None:
    code, report = check("mlp_ported.py", "--against", str(SCRIPTS / "needs_bnb.py"), "--steps", "2")
    assert report["parity"]["no_verdict_reason"] and "bitsandbytes" in report["parity"]["no_verdict_reason"]
    assert report["parity"]["passes"] == []
    # no parity verdict is not a pass: the check says so and does not exit 0
    assert code == 1 and "matched" not in report["verdict"]
    assert any(f["kind"] == "parity" and f["severity"] == "error" and "bitsandbytes" in f["message"] for f in report["findings"])


def test_cannot_run_reason_names_cuda_only_imports() -> None:
    assert "bitsandbytes" in parity.cannot_run_reason("ModuleNotFoundError", "No module named 'bitsandbytes'")
    assert "only with CUDA" in parity.cannot_run_reason("ModuleNotFoundError", "No module named 'apex.optimizers'")
    assert parity.cannot_run_reason("ValueError", "bad") is None


def test_compare_verdicts() -> None:
    same = parity.compare("s", "T", 1e-5, (1.0, 0.5), (1.0, 0.5))
    assert same.verdict == "match" and same.max_rel_delta == 0
    off = parity.compare("s", "T", 1e-5, (1.0, 0.5), (1.0, 0.6))
    assert off.verdict == "mismatch" and off.max_rel_delta == pytest.approx(1 / 6)
    short = parity.compare("s", "T", 1e-5, (1.0,), (1.0, 0.5))
    assert short.verdict == "mismatch" and "steps differ" in short.note
    empty = parity.compare("s", "T", 1e-5, (), (1.0,))
    assert empty.verdict == "no-verdict"


@pytest.mark.slow
def test_original_that_differs_from_itself_is_named() -> None:
    # the port is right, but the original's data come from an unseeded generator: the semantic
    # mismatch is the script's own, and the check says so (it runs the original's fp32 pass again)
    code, report = check("unseeded_port.py", "--against", str(SCRIPTS / "unseeded_cuda.py"), "--steps", "2")
    assert code == 1
    semantic = report["parity"]["passes"][0]
    assert semantic["verdict"] == "mismatch" and "the original against itself" in semantic["note"]
    assert any(f["kind"] == "parity" and "the original against itself" in f["message"] for f in report["findings"])


@pytest.mark.slow
def test_a_deterministic_mismatch_is_the_ports() -> None:
    code, report = check("cnn_ported.py", "--against", str(SCRIPTS / "mlp_cuda.py"), "--steps", "3")
    assert code == 1
    assert not any("against itself" in f["message"] for f in report["findings"])
