import torch
from torch.amp import autocast
from torch.amp.grad_scaler import GradScaler


def train_epoch(model, loader, optimizer, cfg):
    for batch in loader:
        with autocast(device_type="neuron", dtype=torch.bfloat16, enabled=cfg.train.mixed_precision):
            loss = model(batch.to("neuron")).mean()
        if (
            cfg.train.mixed_precision
            and cfg.model.torch_dtype == "float16"
        ):
            # porter: NRN206 GradScaler kept: float16 remains (it is built only when float16 is chosen: if cfg.train.mixed_precision and cfg.model.torch_dtype == "float16", line 14); make it bfloat16, then drop the scaler
            scaler = GradScaler("neuron", enabled=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad()
