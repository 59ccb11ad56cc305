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
def test_unseeded_os_entropy_is_pinned_in_both_runs() -> None:
    # the original and its port draw only unseeded entropy (default_rng(), RandomState(), Random(),
    # os.urandom, a set's order): before the harness pinned it, the original differed from itself
    code, report = check("entropy_port.py", "--against", str(SCRIPTS / "entropy_cuda.py"), "--steps", "3")
    assert code == 0, report["findings"]
    semantic, precision = report["parity"]["passes"]
    assert semantic["verdict"] == "match" == precision["verdict"]
    assert len(semantic["original_losses"]) == 3
    assert not any("the original against itself" in (p["note"] or "") for p in report["parity"]["passes"])


ENTROPY_PROBE = """
import os, random, tempfile, numpy as np, torch
from porter.check.harness import entropy
entropy.pin(int(os.environ["SEED"]))
drawn = [np.random.default_rng().random(), np.random.RandomState().rand(), random.Random().random(),
         os.urandom(4).hex(), torch.seed(), list({"a", "b", "c", "d", "e"})]
pid = os.fork()
if pid == 0:
    print(np.random.default_rng().random(), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print(drawn, np.random.default_rng().random(), tempfile.mkdtemp(prefix="porter-entropy-"))
"""


def test_entropy_pin_is_the_same_every_run_and_follows_the_seed() -> None:
    import os
    import shutil
    import subprocess
    import sys

    from porter.check.runner import PORTER_ROOT

    def probe(seed: int, hash_seed: str) -> tuple[str, str, str]:
        env = {**os.environ, "PYTHONPATH": PORTER_ROOT, "SEED": str(seed), "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", ENTROPY_PROBE], env=env, capture_output=True, text=True,
                             check=True).stdout.split("\n")
        child, parent = out[0], out[1]
        drawn, _, tmp = parent.rpartition(" ")
        shutil.rmtree(tmp, ignore_errors=True)
        return child, drawn, tmp

    child, drawn, tmp = probe(0, "0")
    child2, drawn2, tmp2 = probe(0, "0")
    assert (child, drawn) == (child2, drawn2)
    assert tmp != tmp2  # temp names stay real: runs of one check share the temp folder
    assert child not in drawn  # a forked child draws its own bytes, not its parent's next ones
    assert probe(1, "0")[1] != drawn  # the check's --seed moves it


def test_runs_pin_the_hash_seed() -> None:
    from porter.check.runner import RunSpec, _env

    # set iteration order of strings: the same in every run and in every child (inherited)
    assert _env(RunSpec(script="train.py", seed=0), 0, 0)["PYTHONHASHSEED"] == "0"
    assert _env(RunSpec(script="train.py", seed=7), 0, 0)["PYTHONHASHSEED"] == "7"


def test_hydra_apps_raise_their_own_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hydra prints a task's exception and exits 1 unless HYDRA_FULL_ERROR is set: the check sets it
    so the crash keeps its traceback (named at the script's line); a user's own value is kept."""
    from porter.check.runner import RunSpec, _env

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    assert _env(RunSpec(script="train.py"), 0, 0)["HYDRA_FULL_ERROR"] == "1"
    monkeypatch.setenv("HYDRA_FULL_ERROR", "0")
    assert _env(RunSpec(script="train.py"), 0, 0)["HYDRA_FULL_ERROR"] == "0"


@pytest.mark.slow
def test_original_that_differs_from_itself_is_named() -> None:
    # the port is right, but the original's data come from a generator seeded by the clock (the
    # check pins the OS entropy, not the time): the semantic mismatch is the script's own, and the
    # check says so (it runs the original's fp32 pass again)
    code, report = check("unseeded_port.py", "--against", str(SCRIPTS / "unseeded_cuda.py"), "--steps", "2")
    assert code == 1
    semantic = report["parity"]["passes"][0]
    assert semantic["verdict"] == "mismatch" and "the original against itself" in semantic["note"]
    # the as-written pass is judged the same way (its original run once more, as written)
    precision = report["parity"]["passes"][1]
    assert precision["verdict"] == "mismatch" and "a second as-written run" in precision["note"]
    assert any(f["kind"] == "parity" and "the original against itself" in f["message"] for f in report["findings"])


@pytest.mark.slow
def test_a_deterministic_mismatch_is_the_ports() -> None:
    code, report = check("cnn_ported.py", "--against", str(SCRIPTS / "mlp_cuda.py"), "--steps", "3")
    assert code == 1
    assert not any("against itself" in f["message"] for f in report["findings"])


def test_sensitivity_covers_only_steps_after_the_first_update() -> None:
    """parity.within_sensitivity: the port within rtol for the first two steps, then off no more than
    the original nudged by one ulp per step, at every step it is off."""
    original = (1.0, 0.5, 0.3, 0.2)
    nudged = (1.0, 0.5, 0.24, 0.24)  # deltas 0, 0, 0.2, 0.2
    assert parity.within_sensitivity((1.0, 0.5, 0.27, 0.19), original, nudged, 5e-4) == (2, pytest.approx(0.2))
    # off at step 1 (after one update): a real difference, whatever the rest
    assert parity.within_sensitivity((1.0, 0.49, 0.27, 0.19), original, nudged, 5e-4) is None
    # off at step 3 by more than the nudged original
    assert parity.within_sensitivity((1.0, 0.5, 0.3, 0.1), original, nudged, 5e-4) is None
    # nothing off, lengths differ, or a step without a loss where the port must match
    assert parity.within_sensitivity(original, original, nudged, 5e-4) is None
    assert parity.within_sensitivity((1.0, 0.5, 0.27), original, nudged, 5e-4) is None
    assert parity.within_sensitivity((1.0, None, 0.27, 0.19), original, nudged, 5e-4) is None


@pytest.mark.slow
def test_a_script_that_amplifies_one_ulp_is_judged_by_its_own_sensitivity() -> None:
    """rollout_cuda.py trains on states rolled out from its weights: its port moved one ulp per step
    (what a graph that rounds differently does) is off by 40% from step 2. The sensitivity run of the
    original moves as far: matched, and said so."""
    code, report = check("rollout_port.py", "--against", str(SCRIPTS / "rollout_cuda.py"), "--steps", "6", "--", "ulp")
    assert code == 0, report["findings"]
    assert "within the original's own 1-ulp sensitivity" in report["verdict"]
    for p in report["parity"]["passes"]:
        assert p["verdict"] == "match" and p["tolerance_name"] == parity.SENSITIVITY_NAME
        assert p["max_rel_delta"] > 0.05 and "from step 2" in p["note"]


@pytest.mark.slow
def test_a_port_off_after_one_update_is_not_excused_by_sensitivity() -> None:
    code, report = check("rollout_port.py", "--against", str(SCRIPTS / "rollout_cuda.py"), "--steps", "6", "--", "lr")
    assert code == 1
    semantic = report["parity"]["passes"][0]
    assert semantic["verdict"] == "mismatch" and "not rounding, a difference" in semantic["note"]


def test_no_sensitivity_run_for_runs_that_stopped_at_different_steps() -> None:
    """Steps differ: no rounding explains it, and no extra run is spent (the script does not exist)."""
    from porter.check.orchestrate import CheckOptions, _sensitivity
    from porter.check.report import ParityPass

    p = ParityPass("semantic (fp32, dropout off)", "SEMANTIC_RTOL_COMPILED", 5e-4, 1e-6, (1.0, 0.5, 0.2), (1.0, 0.5),
                   0.0, "mismatch", "steps differ: port 3, original 2")
    options = CheckOptions(script="/nonexistent/port.py", against="/nonexistent/original.py")
    assert _sensitivity(options, p, semantic=True) is p


def test_runs_that_write_under_a_fixed_name_take_turns_with_one_at_a_time() -> None:
    """Two runs at once of a script that records its data under a fixed name collide (the second
    raises FileExistsError); --one-at-a-time runs them one after another and the check passes."""
    against = str(SCRIPTS / "fixed_name_cuda.py")
    code, report = check("fixed_name_port.py", "--against", against, "--steps", "2", "--allow-eager")
    assert code == 2 and "FileExistsError" in str(report["crash"] or report["original_crash"]), report["crash"]
    code, report = check("fixed_name_port.py", "--against", against, "--steps", "2", "--allow-eager", "--one-at-a-time")
    assert report["crash"] is None and report["original_crash"] is None, report["crash"]
    assert code == 0 and [p["verdict"] for p in report["parity"]["passes"]] == ["match", "match"], report["findings"]
