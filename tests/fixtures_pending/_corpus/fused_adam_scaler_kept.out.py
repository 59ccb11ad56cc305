import torch
from torch.amp import GradScaler


def train(world_model, loader, device, cfg):
    use_fused = device.type == "cuda"
    opt = torch.optim.Adam(world_model.parameters(), lr=cfg.lr, fused=use_fused)
    if cfg.autocast == "float16":
        # porter: NRN208 float16 kept: `cfg.autocast == "float16"` decides the dtype (a user choice); on Trainium choose bfloat16 there (float16 needs its GradScaler)
        amp_dtype = torch.float16
    else:
        amp_dtype = torch.bfloat16
    # porter: NRN206 GradScaler kept: float16 remains (torch.float16 chosen by cfg.autocast == "float16", line 9); make it bfloat16, then drop the scaler
    scaler = GradScaler("neuron", enabled=amp_dtype == torch.float16)
    for batch in loader:
        with torch.autocast(device_type=device.type, dtype=amp_dtype):
            loss = world_model(batch).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
