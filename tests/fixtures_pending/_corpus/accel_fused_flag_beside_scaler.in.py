"""Detection trainer shaped like ultralytics' BaseTrainer: float16 AMP with a GradScaler, and the optimizer
builder turns on fused Adam/AdamW when the model's parameters are on CUDA."""
import torch
from torch import optim


class Trainer:
    def __init__(self, model, device, amp=True):
        self.model = model.to(device)
        self.device = device
        self.amp = amp and device.type != "cpu"
        self.scaler = torch.cuda.amp.GradScaler(enabled=self.amp)
        self.optimizer = self.build_optimizer(model, name="AdamW", lr=1e-3)

    def build_optimizer(self, model, name="AdamW", lr=1e-3):
        # fused=True goes to the constructor, where Adam registers _step_supports_amp_scaling
        fused = {"fused": True} if name in {"Adam", "AdamW"} and next(model.parameters()).is_cuda else {}
        return getattr(optim, name)(model.parameters(), lr=lr, **fused)

    def train_epoch(self, loader, criterion):
        for images, targets in loader:
            images, targets = images.to(self.device), targets.to(self.device)
            with torch.autocast(self.device.type, enabled=self.amp):
                loss = criterion(self.model(images), targets)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad()
