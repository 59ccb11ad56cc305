import torch
from torch.amp import autocast
from torch.amp.grad_scaler import GradScaler


def train_epoch(model, loader, optimizer, cfg):
    for batch in loader:
        with autocast("cuda", enabled=cfg.train.mixed_precision):
            loss = model(batch.cuda()).mean()
        if (
            cfg.train.mixed_precision
            and cfg.model.torch_dtype == "float16"
        ):
            scaler = GradScaler(enabled=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad()
