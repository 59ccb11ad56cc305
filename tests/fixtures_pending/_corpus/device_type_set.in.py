import torch


def warmup(model, device, use_autocast, size):
    dummy = torch.zeros(1, 3, size, size, device=device)
    if use_autocast and device.type == "cuda":
        dummy = dummy.half()
    with torch.inference_mode():
        if use_autocast and device.type in {"cuda", "mps"}:
            with torch.autocast(device.type):
                return model(dummy)
        return model(dummy)
