"""Crafted port: a word-LM style loop with no optimizer (hand-written SGD update)."""
import torch
import torch.nn as nn

device = torch.device("neuron")
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
step_fn = torch.compile(model, backend="neuron")
lr = 0.1
total = 0.0
for batch in range(10):
    x = torch.randn(4, 8).to(device)
    loss = step_fn(x).pow(2).mean()
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
    total += loss.item()  # SYNC-LINE
