"""Crafted: a model built on the device (torchtune's recipes: `with self._device:` around the model's
constructor) and a layer given device= itself: their parameters are on the neuron device (no mixing)."""
import torch
import torch.nn as nn

device = torch.device("neuron")
torch.manual_seed(0)
with device:
    body = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
head = nn.Linear(16, 1, device=device)
model = torch.compile(nn.Sequential(body, head), backend="neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(4, 8, device=device)
for step in range(4):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
