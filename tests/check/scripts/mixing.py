"""Crafted: the batch never moved to the device (CPU input into a neuron model)."""
import torch
import torch.nn as nn

model = nn.Linear(4, 1).to("neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(2, 4)
    loss = model(x).pow(2).mean()  # MIX-LINE
    loss.backward()
    opt.step()
    opt.zero_grad()
