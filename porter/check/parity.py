"""Loss parity between a port and its original, with named tolerances printed in the report.

Two passes (DESIGN.md, "Measured: parity works, if it is done this way"):
- semantic: both scripts in fp32 (autocast off, dropout off, same seeds). Isolates the port's
  semantics from precision; hand ports matched to 6 decimals eager-vs-eager, ~2e-4 where one side is
  compiled (fused vs foreach AdamW, decomposed vs eager numerics).
- precision: the port as written (bf16 autocast) against the original as written (fp16/fp32 AMP).
A pass that mismatches while its original matches itself gets a sensitivity run (orchestrate.py's
_sensitivity, ``within_sensitivity`` here): the original with each parameter moved one ulp after
every optimizer step bounds what rounding alone does to a script that amplifies it.
"""

from __future__ import annotations

import math
import re

from porter.check.report import ParityPass

# fp32 vs fp32, neither side compiled: summation order is the only difference.
SEMANTIC_RTOL_EAGER = 1e-5
# fp32 vs fp32 with the port compiled (AOT decompositions, fused optimizers): measured ~2e-4.
SEMANTIC_RTOL_COMPILED = 5e-4
# bf16 port vs fp16/fp32 original: bf16 keeps 8 mantissa bits (~4e-3 per rounding); a few training
# steps of a small model stay within a few percent.
PRECISION_RTOL = 5e-2
# Absolute floor so that losses near zero are not judged by relative error alone.
LOSS_ATOL = 1e-6
# The sensitivity run: the fp32 original with every parameter moved one ulp after each optimizer step.
SENSITIVITY_NAME = "ORIGINAL_1ULP_SENSITIVITY"
# Steps the port must match within the pass's own tolerance before sensitivity may explain the rest:
# the first loss (the forward) and the loss after one update (the update itself).
SENSITIVITY_MIN_STEPS = 2

# Imports that exist only where CUDA does: an original importing them cannot run here.
CUDA_ONLY_MODULES = ("bitsandbytes", "apex", "flash_attn", "xformers", "triton", "deepspeed", "transformer_engine", "cupy", "pycuda", "nvidia")
_MISSING = re.compile(r"No module named '([\w.]+)'")


def cannot_run_reason(error_type: str | None, message: str | None) -> str | None:
    """Why the original cannot run here (a CUDA-only import), or None."""
    if error_type not in ("ModuleNotFoundError", "ImportError") or not message:
        return None
    match = _MISSING.search(message)
    name = match.group(1) if match else ""
    root = name.split(".")[0]
    if root in CUDA_ONLY_MODULES:
        return f"the original imports `{name}`, which exists only with CUDA: it cannot run here"
    return f"the original cannot import `{name or message}` here"


def relative_delta(port: float, original: float) -> float:
    return abs(port - original) / max(abs(original), LOSS_ATOL)


def compare(
    name: str,
    tolerance_name: str,
    rtol: float,
    port: tuple[float | None, ...],
    original: tuple[float | None, ...],
    note: str = "",
) -> ParityPass:
    """Per-step comparison over the steps both runs reached; a verdict only when there is one."""
    deltas = [d for d in step_deltas(port, original) if d is not None]
    if not deltas:
        return ParityPass(name, tolerance_name, rtol, LOSS_ATOL, port, original, None, "no-verdict",
                          note or "no step produced a loss in both runs")
    worst = max(deltas)
    verdict = "match" if worst <= rtol and len(port) == len(original) else "mismatch"
    if len(port) != len(original):
        note = (note + "; " if note else "") + f"steps differ: port {len(port)}, original {len(original)}"
    return ParityPass(name, tolerance_name, rtol, LOSS_ATOL, port, original, worst, verdict, note)


def step_deltas(port: tuple[float | None, ...], original: tuple[float | None, ...]) -> tuple[float | None, ...]:
    """The relative delta at each step both runs reached (None where either has no loss)."""
    return tuple(
        None if a is None or b is None or math.isnan(a) or math.isnan(b) else relative_delta(a, b)
        for a, b in zip(port, original)
    )


def within_sensitivity(port: tuple[float | None, ...], original: tuple[float | None, ...],
                       nudged: tuple[float | None, ...], rtol: float) -> tuple[int, float] | None:
    """(first step, worst delta) of the original's own sensitivity where it covers the port: the
    port is within ``rtol`` for the first SENSITIVITY_MIN_STEPS steps, and at every step it is off
    by more, the original moved one ulp per step is off by at least as much. None where the runs'
    lengths differ or some step is not covered (a real difference, not rounding)."""
    if not (len(port) == len(original) == len(nudged)):
        return None
    ported, own = step_deltas(port, original), step_deltas(nudged, original)
    over = [i for i, d in enumerate(ported) if d is not None and d > rtol]
    if not over or over[0] < SENSITIVITY_MIN_STEPS or any(d is None for d in ported[:SENSITIVITY_MIN_STEPS]):
        return None
    for i in over:
        covering = own[i]
        if covering is None or covering < (ported[i] or 0.0):
            return None
    worst = max(d for d in own if d is not None)
    return over[0], worst
