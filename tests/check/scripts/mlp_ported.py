"""Parity port of mlp_cuda.py (by hand, as porter migrate would): bf16 autocast, no scaler,
AdamW(weight_decay=0.0, fused=True), compiled with backend="neuron", logging every 2 steps."""
import torch
import torch.nn as nn

torch.manual_seed(0)
device = "neuron"
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4)).to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0, fused=True)
compiled = torch.compile(model, backend="neuron", fullgraph=True)
loss_fn = nn.CrossEntropyLoss()
data = [(torch.randn(8, 16), torch.randint(0, 4, (8,))) for _ in range(8)]
for step, (x, y) in enumerate(data):
    x, y = x.to(device, non_blocking=True), y.to("neuron")
    opt.zero_grad()
    with torch.autocast(device_type="neuron", dtype=torch.bfloat16):
        loss = loss_fn(compiled(x), y)
    loss.backward()
    opt.step()
    if step % 2 == 0:
        print(f"step {step} loss {loss.item():.4f}")
