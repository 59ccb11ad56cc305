"""Crafted port: GradScaler kept with a fused AdamW (Neuron's fused kernel ignores the scale)."""
import torch
import torch.nn as nn

device = torch.device("neuron")
model = nn.Linear(8, 1).to(device)
step_fn = torch.compile(model, backend="neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
scaler = torch.amp.GradScaler("neuron")
for step in range(4):
    with torch.autocast("neuron", dtype=torch.bfloat16):
        loss = step_fn(torch.randn(4, 8, device=device)).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)  # SCALER-STEP
    scaler.update()
    opt.zero_grad()
