"""End to end (slow): the folder samples (``samples/<name>/train.py`` + ``make_data.py``) ported by
``porter migrate`` and checked ``--against`` their originals on the synthetic data their generator
writes, distributed ones with ``--nproc 2``.

A sample is verified only when the check exits 0, ran the requested steps, and both parity passes
(fp32 semantic, precision as written) matched over every step. The check runs in a subprocess with a
bounded address space, so a lowering that runs away fails this test instead of the machine.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEPS = 4
MEMORY_LIMIT = 8 * 1024**3  # bytes of address space for the check and the runs it starts
TIMEOUT_S = 900


@dataclass(frozen=True)
class Sample:
    name: str
    args: tuple[str, ...]  # script arguments; "{data}" is the folder make_data.py wrote
    nproc: int = 1


SAMPLES = (
    Sample("char_gpt", ("--data", "{data}/input.txt", "--sample-every", "2")),
    Sample("word_lm", ("--data", "{data}", "--cuda")),
    Sample("gnn", ("--path", "{data}/", "--dataset", "synth")),
    # mp.spawn starts its own world: one harness process that spawns two ranks.
    Sample("ddp_spawn", ("--data", "{data}/regression.pt", "--world-size", "2")),
    Sample("ddp_device_id", ("--data", "{data}/digits.pt"), nproc=2),
    Sample("fsdp2", ("--data", "{data}/tokens.npy", "--mixed-precision"), nproc=2),
    Sample("gpt2_tokens", ("--input-bin", "{data}/synth_train_*.bin", "--input-val-bin", "{data}/synth_val_*.bin",
                           "--sequence-length", "32", "--total-batch-size", "256")),
)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _summary(report: dict) -> list[tuple]:
    return [(f["severity"], f["kind"], f["line"], f["message"][:200]) for f in report["findings"]]


@pytest.mark.slow
@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_folder_sample_ports_and_verifies(sample: Sample, tmp_path: Path) -> None:
    folder = ROOT / "samples" / sample.name
    data = tmp_path / "data"
    subprocess.run([sys.executable, str(folder / "make_data.py"), str(data)], check=True, timeout=120)

    out = tmp_path / "ported"
    migrate = subprocess.run(
        [sys.executable, "-m", "porter", "migrate", str(folder), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    ported = out / "train.py"
    assert ported.exists(), migrate.stdout + migrate.stderr
    assert ported.read_text() != (folder / "train.py").read_text(), "porter changed nothing"

    report_path = tmp_path / "report.json"
    args = [a.replace("{data}", str(data)) for a in sample.args]
    check = subprocess.run(
        [sys.executable, "-m", "porter", "check", str(ported), "--against", str(folder / "train.py"),
         "--steps", str(STEPS), "--nproc", str(sample.nproc), "--timeout", "600", "--json", str(report_path),
         "--", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, preexec_fn=_limit_memory,
    )
    assert report_path.exists(), f"exit {check.returncode}, no report:\n{check.stdout[-3000:]}\n{check.stderr[-3000:]}"
    report = json.loads(report_path.read_text())
    assert report["crash"] is None, report["crash"]
    assert check.returncode == 0, (report["verdict"], _summary(report))
    assert report["steps_run"] == STEPS, (report["steps_run"], report["notes"])
    passes = (report["parity"] or {}).get("passes", [])
    assert [p["verdict"] for p in passes] == ["match", "match"], report["parity"]
    for parity_pass in passes:
        assert len(parity_pass["port_losses"]) == STEPS, parity_pass
        assert len(parity_pass["original_losses"]) == STEPS, parity_pass
