"""GradScaler on the trainer's device: XPU keeps its own, everything else was CUDA's (ultralytics shape, accelerator style)."""

import torch

from .amp_utils import autocast

TORCH_2_4 = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 4)


class Runner:
    def __init__(self, device, amp_mode="fp16"):
        self.device = torch.device(device)
        self.amp = self.device.type != "cpu" and amp_mode != "fp32"
        self.amp_mode = amp_mode

    def setup(self, model):
        self.model = model.to(self.device)
        self.scaler = (
            torch.amp.GradScaler(
                self.device.type if self.device.type == "xpu" else "cuda",
                enabled=self.amp and self.amp_mode != "bf16",
            )
            if TORCH_2_4
            else torch.cuda.amp.GradScaler(enabled=self.amp and self.amp_mode != "bf16")
        )

    def step(self, batch, optimizer):
        with autocast(self.amp, device=self.device.type):
            loss = self.model(batch).sum()
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)
        self.scaler.update()
        optimizer.zero_grad()
