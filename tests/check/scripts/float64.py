"""Crafted: a float64 tensor created on the device."""
import torch
import torch.nn as nn

device = torch.device("neuron")
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scale = torch.ones(1, dtype=torch.float64, device=device)  # F64-LINE
for step in range(4):
    loss = (model(torch.randn(2, 4, device=device)).double() * scale).mean().float()
    loss.backward()
    opt.step()
    opt.zero_grad()
