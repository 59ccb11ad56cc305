"""Crafted: a `.item()` once per epoch of two optimizer steps (an outer loop, not an interval test):
a host sync at every other step, reported with the steps it ran at, not as every step."""
import torch
import torch.nn as nn

device = torch.device("neuron")
model = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step_fn = torch.compile(model, backend="neuron", fullgraph=True)
for epoch in range(4):
    total = torch.zeros((), device=device)
    for _ in range(2):
        loss = step_fn(torch.randn(4, 8).to(device)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        total += loss.detach()
    print("epoch", epoch, total.item())  # EPOCH-SYNC
