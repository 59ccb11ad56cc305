"""An autocast helper that checks bfloat16 support for the device it is given (ultralytics shape)."""

import torch


def autocast(enabled, device=torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"):
    dtype = enabled if isinstance(enabled, torch.dtype) else None
    enabled = bool(enabled)
    if dtype is torch.bfloat16:
        bf16_supported = torch.accelerator.is_available() and device == torch.accelerator.current_accelerator().type and torch.get_device_module().is_bf16_supported()
        if not bf16_supported:
            raise RuntimeError("bfloat16 autocast requires CUDA with native bfloat16 support")
    kwargs = {"dtype": dtype} if dtype is not None else {}
    if device == "mps":
        device, enabled = "cpu", False
    # porter: NRN202 autocast with unmappable arguments: port to torch.autocast(device_type="neuron", dtype=torch.bfloat16)
    return torch.amp.autocast(device, enabled=enabled, **kwargs)


def train_step(model, batch, device):
    with autocast(torch.bfloat16, device=device.type):
        loss = model(batch).mean()
    loss.backward()
    return loss
