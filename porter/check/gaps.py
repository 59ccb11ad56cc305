"""Known gaps of upstream torch-mlir that TorchNeuron closes in its own front end.

A graph whose only lowering failures are ops listed here is reported as "not verified by the emulated
front end": never a pass, never the script's failure (it fails only under ``--strict``). Any failure
not listed here is the script's finding. Every entry has a test (tests/check/test_gaps.py) proving it
still fails upstream, so the table shrinks when torch-mlir catches up.

Keys are ATen op names as ``porter.check.lowering.op_name`` spells them (``aten.<name>``).
"""

from __future__ import annotations

KNOWN_GAPS: dict[str, str] = {
    "aten.convolution_backward": (
        "backward of transposed convolutions (ConvTranspose2d): upstream torch-mlir has no StableHLO "
        "lowering for this form (Conv2d's lowers; Conv1d's is decomposed into it by porter); "
        "TorchNeuron lowers it in its fork"
    ),
    "aten.avg_pool2d_backward": (
        "AvgPool2d backward with overlapping windows, padding or ceil_mode: no StableHLO lowering "
        "upstream (the non-overlapping form is decomposed by porter)"
    ),
}


def is_known_gap(op: str) -> bool:
    """True when ``op`` (``aten.foo`` or ``aten.foo.overload``) is a known upstream gap."""
    base = op.rsplit(".", 1)[0] if op.count(".") >= 2 else op
    return op in KNOWN_GAPS or base in KNOWN_GAPS
