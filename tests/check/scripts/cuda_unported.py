"""Crafted: an unported CUDA script (what porter migrate would change)."""
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # CUDA-AVAILABLE
model = nn.Linear(8, 2).cuda()  # CUDA-METHOD
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()  # SCALER
for step in range(4):
    x = torch.randn(4, 8, device="cuda")  # CUDA-STRING
    with torch.autocast("cuda"):  # AUTOCAST
        loss = model(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    torch.cuda.synchronize()  # SYNCHRONIZE
