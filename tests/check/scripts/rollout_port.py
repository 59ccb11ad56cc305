"""Crafted port of rollout_cuda.py, compiled. ``ulp``: after each step every weight moves one ulp,
the size of one rounding a compiled graph may do differently (the check's sensitivity run does the
same to the original). ``lr``: the learning rate 1% off, a real difference (the loss after one
update is off)."""
import sys

import torch
import torch.nn as nn

device = torch.device("neuron")
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1 * (1.01 if "lr" in sys.argv[1:] else 1.0))
forward = torch.compile(model, backend="neuron")
start = torch.rand(16, 4).to(device)
target = torch.rand(16, 1).to(device)
for step in range(6):
    x = start
    if step >= 2:
        with torch.no_grad():
            x = torch.sigmoid(start + model.weight.sum())
            for _ in range(30):
                x = 3.99 * x * (1 - x)
    loss = ((forward(x) - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if "ulp" in sys.argv[1:]:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.nextafter(p, torch.full_like(p, float("inf"))))
