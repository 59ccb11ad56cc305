"""Crafted: the original of crashes.py: it crashes in the step loop (a shape bug)."""
import torch
import torch.nn as nn

model = nn.Linear(4, 2).to("cuda")
for step in range(3):
    x = torch.randn(2, 5, device="cuda")
    loss = model(x).sum()  # CRASH-LINE
    loss.backward()
