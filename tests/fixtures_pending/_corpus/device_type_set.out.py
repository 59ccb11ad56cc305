import torch


def warmup(model, device, use_autocast, size):
    dummy = torch.zeros(1, 3, size, size, device=device)
    if use_autocast and device.type == "neuron":
        dummy = dummy.bfloat16()
    with torch.inference_mode():
        if use_autocast and device.type in {"neuron", "mps"}:
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                return model(dummy)
        return model(dummy)
