"""Warm a compiled detector up once, timing it; MPS has its own autocast branch (ultralytics shape)."""

import time

import torch


def warmup_compiled(model, imgsz, device, use_autocast=False):
    dummy = torch.zeros(1, 3, imgsz, imgsz, device=device)
    if use_autocast and device.type == "cuda":
        dummy = dummy.half()
    t0 = time.perf_counter()
    with torch.inference_mode():
        if use_autocast and device.type in {"cuda", "mps"}:
            with torch.autocast(device.type):
                _ = model(dummy)
        else:
            _ = model(dummy)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - t0
