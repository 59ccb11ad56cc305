import torch
from torch.amp import GradScaler


def train(world_model, loader, device, cfg):
    use_fused = device.type == "cuda"
    opt = torch.optim.Adam(world_model.parameters(), lr=cfg.lr, fused=use_fused)
    if cfg.autocast == "float16":
        amp_dtype = torch.float16
    else:
        amp_dtype = torch.bfloat16
    scaler = GradScaler(enabled=amp_dtype == torch.float16)
    for batch in loader:
        with torch.autocast(device_type=device.type, dtype=amp_dtype):
            loss = world_model(batch).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
