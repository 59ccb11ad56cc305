import torch


def autocast(enabled, device: str = "neuron" if torch.accelerator.is_available() else "cpu"):
    dtype = enabled if isinstance(enabled, torch.dtype) else None
    enabled = bool(enabled)
    kwargs = {"dtype": dtype} if dtype is not None else {}
    if device == "mps":
        device, enabled = "cpu", False
    # porter: NRN202 autocast with unmappable arguments: port to torch.autocast(device_type="neuron", dtype=torch.bfloat16)
    return torch.amp.autocast(device, enabled=enabled, **kwargs)


def evaluate(model, batches):
    with autocast(True):
        return [model(b) for b in batches]
