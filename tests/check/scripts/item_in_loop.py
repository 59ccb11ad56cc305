"""Crafted: a `.item()` on the device every step (a per-step host sync)."""
import torch
import torch.nn as nn

device = torch.device("neuron")
model = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step_fn = torch.compile(model, backend="neuron", fullgraph=True)
total = 0.0
for step in range(10):
    x = torch.randn(4, 8).to(device)
    loss = step_fn(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    total += loss.item()  # SYNC-LINE
    if step % 5 == 0:
        print("loss", loss.item())
    # porter: NRN602 .item() feeds control flow; runs a host sync every step
    if loss.item() > 1e9:
        break
