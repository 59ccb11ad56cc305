"""Activation checkpointing under the emulated device.

``torch.utils.checkpoint`` (non-reentrant) records each saved tensor's shape, dtype and device in
the forward and compares them with the recomputed tensor's in the backward. An emulated device is a
tag on a CPU tensor that the device mode answers for; the forward records under one mode state and
the recompute runs under another (the mode is off while it handles ``backward()``, a compiled
region's outputs are tagged after it returns), so the same tensor reads ``neuron`` once and ``cpu``
once and the check raises ``CheckpointError`` on a program that is fine on the real device
(torchtune's checkpointed layers, compiled or not). The comparison is made on the real device,
the CPU for both: shape and dtype are still compared.
"""

from __future__ import annotations

from typing import Any


def patch_checkpoint_metadata() -> None:
    import torch
    import torch.utils.checkpoint as checkpoint

    key = getattr(checkpoint, "_DEFAULT_DETERMINISM_MODE", None)
    table: dict[str, Any] | None = getattr(checkpoint, "_allowed_determinism_checks_to_fns", None)
    if key is None or table is None or key not in table:
        return  # another torch's checkpoint internals (2.13's at torch/utils/checkpoint.py:1070-1081): left as they are

    def metadata(x: torch.Tensor) -> dict[str, Any]:
        with torch._C.DisableTorchFunction():  # the real device: the emulation's tag is not read
            return {"shape": x.shape, "dtype": x.dtype, "device": x.device}

    table[key] = metadata
