"""Benchmark: what ``porter check`` (emulated target) costs per script, against a plain CPU run.

For each ported script, in one run of this file:
- check: ``porter check SCRIPT --steps N`` end to end (subprocess, emulation, collectors, Dynamo,
  AOTAutograd, torch-mlir lowering of every graph, report);
- plain: the same ported script for the same N optimizer steps under a bare harness (``neuron``
  mapped to the CPU, torch.compile run eagerly, nothing collected).
Both are wall times of a whole subprocess (interpreter + ``import torch`` included), then the time
inside the script alone. Prints one row per script and the ratios.

    python bench/check.py                       # the check's own parity ports + ported samples
    python bench/check.py path/to/ported.py ... --steps 5
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from porter.check.orchestrate import CheckOptions, run_check  # noqa: E402
from porter.check.runner import RunSpec, run  # noqa: E402

DEFAULT_SCRIPTS = [ROOT / "tests/check/scripts/mlp_ported.py", ROOT / "tests/check/scripts/cnn_ported.py"]


def ported_samples(out_dir: Path) -> list[Path]:
    """Port samples/*.py with ``porter migrate --out`` (skipped when migrate fails)."""
    samples = sorted((ROOT / "samples").glob("*.py"))
    ported = []
    for sample in samples:
        target = out_dir / sample.name
        proc = subprocess.run(
            [sys.executable, "-m", "porter", "migrate", str(sample), "--out", str(out_dir)],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )
        if proc.returncode in (0, 1) and target.exists():
            ported.append(target)
    return ported


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="*", type=Path)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--samples", action="store_true", help="also port and bench samples/*.py")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    scripts = list(args.scripts) or list(DEFAULT_SCRIPTS)
    tmp = Path(tempfile.mkdtemp(prefix="porter-bench-"))
    if args.samples:
        scripts += ported_samples(tmp)
    print(f"{'script':<28} {'check s':>8} {'plain s':>8} {'ratio':>6} {'in-script check':>16} {'in-script plain':>16} {'ratio':>6}  verdict")
    for script in scripts:
        started = time.perf_counter()
        report = run_check(CheckOptions(script=str(script), steps=args.steps, target="emulated", timeout=args.timeout))
        check_s = time.perf_counter() - started
        plain = run(RunSpec(script=str(script), role="plain", steps=args.steps, timeout=args.timeout))
        plain_s = plain.wall_s
        rec = plain.record or {}
        # the check's own in-script time comes from a second, identical run of the port (not timed above)
        checked = run(RunSpec(script=str(script), role="port", steps=args.steps, timeout=args.timeout))
        in_check = (checked.record or {}).get("script_s", float("nan"))
        in_plain = rec.get("script_s", float("nan"))
        print(
            f"{os.path.basename(str(script)):<28} {check_s:8.1f} {plain_s:8.1f} {check_s / plain_s:6.2f} "
            f"{in_check:16.2f} {in_plain:16.2f} {in_check / in_plain if in_plain else float('nan'):6.2f}  "
            f"{report.verdict} (exit {report.exit_code}); plain: {rec.get('status', 'no result')}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
