"""Ported MLP (neuron style): bf16 autocast, AdamW fused, compiled, logging every 2 steps."""
import torch
import torch.nn as nn

device = torch.device("neuron" if torch.neuron.is_available() else "cpu")
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0, fused=True)
compiled = torch.compile(model, backend="neuron", fullgraph=True)
loss_fn = nn.CrossEntropyLoss()
data = [(torch.randn(8, 16), torch.randint(0, 4, (8,))) for _ in range(6)]
running = torch.zeros((), device=device)
for step, (x, y) in enumerate(data):
    x, y = x.to(device), y.to(device)
    opt.zero_grad()
    with torch.autocast(device_type="neuron", dtype=torch.bfloat16):
        loss = loss_fn(compiled(x), y)
    loss.backward()
    opt.step()
    running += loss.detach()
    if (step + 1) % 2 == 0:
        print(f"step {step} loss {(running / 2).item():.4f}")
        running.zero_()
