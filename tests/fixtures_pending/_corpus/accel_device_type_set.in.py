"""Canonicalise a requested device; other backends pass through (ultralytics select_device shape)."""

import torch


def parse_device(device):
    return str(device).lower().replace("cuda:", "").replace("none", "").strip()


def select_device(device=""):
    if isinstance(device, torch.device):
        if device.type not in {"cpu", "cuda", "npu", "xpu"}:
            return device  # other torch.device inputs pass through; cpu and accelerator inputs canonicalize below
    elif str(device).startswith(("tpu", "intel", "vulkan")):
        return device
    device = parse_device(device)
    if device.startswith(("npu", "xpu")):
        backend = getattr(torch, device.split(":", 1)[0])
        if not backend.is_available():
            raise ValueError(f"Invalid device={device} requested")
        return torch.device(device)
    cpu = device == "cpu"
    if not cpu and torch.cuda.is_available():
        devices = device.split(",") if device else [str(torch.cuda.current_device())]
        arg = f"cuda:{devices[0]}"
    else:
        arg = "cpu"
    return torch.device(arg)


if __name__ == "__main__":
    print(select_device(torch.device("cpu")))
