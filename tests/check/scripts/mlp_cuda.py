"""Parity original (CUDA style): fp16 AMP with GradScaler, Adam, dropout, loss.item() every step."""
import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda"
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
scaler = torch.cuda.amp.GradScaler()
loss_fn = nn.CrossEntropyLoss()
data = [(torch.randn(8, 16), torch.randint(0, 4, (8,))) for _ in range(8)]
for step, (x, y) in enumerate(data):
    x, y = x.to(device, non_blocking=True), y.cuda()
    opt.zero_grad()
    with torch.cuda.amp.autocast():
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print(f"step {step} loss {loss.item():.4f}")
