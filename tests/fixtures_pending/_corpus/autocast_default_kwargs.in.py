import torch


def autocast(enabled, device: str = "cuda"):
    dtype = enabled if isinstance(enabled, torch.dtype) else None
    enabled = bool(enabled)
    kwargs = {"dtype": dtype} if dtype is not None else {}
    if device == "mps":
        device, enabled = "cpu", False
    return torch.amp.autocast(device, enabled=enabled, **kwargs)


def evaluate(model, batches):
    with autocast(True):
        return [model(b) for b in batches]
