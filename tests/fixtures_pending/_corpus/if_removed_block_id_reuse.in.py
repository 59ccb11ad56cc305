"""Determinism switches of a trainer (shaped like lightning's accelerator connector).

The port removes the first `if` (its body held only a removed statement) and must keep the last one.
On b96b204 about one port in ten removes the last `if` too, silently: the id() of the freed first
block is reused by a block built later (porter/engine/core.py, _EditApplier.emptied). One port
usually passes: port this case ~150 times in one process to see it."""
import os

import torch


def set_torch_flags(*, deterministic=None, benchmark=None):
    if deterministic:
        if benchmark is None:
            benchmark = False
    if benchmark is not None:
        torch.backends.cudnn.benchmark = benchmark

    if deterministic == "warn":
        torch.use_deterministic_algorithms(True, warn_only=True)
    elif isinstance(deterministic, bool):
        torch.use_deterministic_algorithms(deterministic)
    if deterministic:
        # cuBLAS needs a fixed workspace to give the same sums twice
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
