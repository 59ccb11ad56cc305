"""Loss parity between a port and its original, with named tolerances printed in the report.

Two passes (DESIGN.md, "Measured: parity works, if it is done this way"):
- semantic: both scripts in fp32 (autocast off, dropout off, same seeds). Isolates the port's
  semantics from precision; hand ports matched to 6 decimals eager-vs-eager, ~2e-4 where one side is
  compiled (fused vs foreach AdamW, decomposed vs eager numerics).
- precision: the port as written (bf16 autocast) against the original as written (fp16/fp32 AMP).
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
    steps = min(len(port), len(original))
    deltas = []
    for i in range(steps):
        a, b = port[i], original[i]
        if a is None or b is None or math.isnan(a) or math.isnan(b):
            continue
        deltas.append(relative_delta(a, b))
    if not deltas:
        return ParityPass(name, tolerance_name, rtol, LOSS_ATOL, port, original, None, "no-verdict",
                          note or "no step produced a loss in both runs")
    worst = max(deltas)
    verdict = "match" if worst <= rtol and len(port) == len(original) else "mismatch"
    if len(port) != len(original):
        note = (note + "; " if note else "") + f"steps differ: port {len(port)}, original {len(original)}"
    return ParityPass(name, tolerance_name, rtol, LOSS_ATOL, port, original, worst, verdict, note)
