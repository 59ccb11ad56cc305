"""Crafted: the port crashes in the step loop (a shape bug)."""
import torch
import torch.nn as nn

model = nn.Linear(4, 2).to("neuron")
for step in range(3):
    x = torch.randn(2, 5, device="neuron")
    loss = model(x).sum()  # CRASH-LINE
    loss.backward()
