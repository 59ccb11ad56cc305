import torch
from torch.amp import GradScaler, autocast

from mypkg.models import load_model


def train(loader, opt, cfg):
    model = load_model(cfg.model_name, dtype_name=cfg.torch_dtype).to("neuron")
    # porter: NRN206 GradScaler kept: float16 remains (the option "float16" selects it, line 13); make it bfloat16, then drop the scaler
    scaler = GradScaler("neuron", enabled=cfg.mixed_precision)
    for batch in loader:
        with autocast(device_type="neuron", dtype=torch.bfloat16, enabled=cfg.mixed_precision):
            loss = model(batch.to("neuron")).mean()
        if cfg.mixed_precision and cfg.torch_dtype == "float16":
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad()
