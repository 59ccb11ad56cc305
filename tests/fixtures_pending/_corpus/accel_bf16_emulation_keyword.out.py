"""An autocast helper that refuses emulated bfloat16 on the device it is given (ultralytics shape).

The CUDA check passes ``including_emulation=False`` so that a pre-Ampere GPU is refused; the
default device is CUDA, and callers pass their training device's type.
"""

import torch


def autocast(enabled, device=torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"):
    dtype = enabled if isinstance(enabled, torch.dtype) else None
    enabled = bool(enabled)
    if dtype is torch.bfloat16:
        bf16_supported = device == getattr(torch.accelerator.current_accelerator(), "type", "cuda")
        if bf16_supported:
            bf16_supported = torch.get_device_module().is_bf16_supported(including_emulation=False) if getattr(torch.accelerator.current_accelerator(), "type", "cuda") == "cuda" else torch.get_device_module().is_bf16_supported()
        if not bf16_supported:
            raise RuntimeError("bfloat16 autocast requires a device with native bfloat16 support")
    kwargs = {"dtype": dtype} if dtype is not None else {}
    if device == "mps":  # no bfloat16 autocast on this build's MPS
        device, enabled = "cpu", False
    # porter: NRN202 autocast with unmappable arguments: port to torch.autocast(device_type="neuron", dtype=torch.bfloat16)
    return torch.amp.autocast(device, enabled=enabled, **kwargs)


def train_step(model, batch, optimizer, device):
    with autocast(torch.bfloat16, device=device.type):
        loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss
