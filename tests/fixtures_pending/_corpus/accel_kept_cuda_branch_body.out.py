"""Warm a compiled detector up once, timing it; MPS has its own autocast branch (ultralytics shape)."""

import time

import torch


def warmup_compiled(model, imgsz, device, use_autocast=False):
    dummy = torch.zeros(1, 3, imgsz, imgsz, device=device)
    if use_autocast and device.type == getattr(torch.accelerator.current_accelerator(), "type", "cuda"):
        dummy = dummy.bfloat16()
    t0 = time.perf_counter()
    with torch.inference_mode():
        if use_autocast and device.type in {getattr(torch.accelerator.current_accelerator(), "type", "cuda"), "mps"}:
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                _ = model(dummy)
        else:
            _ = model(dummy)
    if device.type == getattr(torch.accelerator.current_accelerator(), "type", "cuda"):
        torch.accelerator.synchronize(device)
    return time.perf_counter() - t0
