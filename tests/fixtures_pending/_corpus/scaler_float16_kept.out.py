import torch
from torch.amp import GradScaler, autocast


def train(model, loader, opt, cfg):
    model = model.to(dtype=torch.float16 if cfg.dtype == "float16" else torch.float32).to("neuron")
    scaler = GradScaler("neuron", enabled=cfg.mixed_precision and cfg.dtype == "float16")
    for batch in loader:
        with autocast("neuron", enabled=cfg.mixed_precision):
            loss = model(batch.to("neuron")).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
