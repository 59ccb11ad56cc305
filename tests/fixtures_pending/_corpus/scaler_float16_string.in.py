import torch
from torch.amp import GradScaler, autocast

from mypkg.models import load_model


def train(loader, opt, cfg):
    model = load_model(cfg.model_name, dtype_name=cfg.torch_dtype).cuda()
    scaler = GradScaler(enabled=cfg.mixed_precision)
    for batch in loader:
        with autocast("cuda", enabled=cfg.mixed_precision):
            loss = model(batch.cuda()).mean()
        if cfg.mixed_precision and cfg.torch_dtype == "float16":
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad()
