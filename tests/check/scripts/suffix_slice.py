"""Crafted port: a compiled model slicing x[:, n:, :] (its backward is a slice_scatter to INT64_MAX)."""
import torch
import torch.nn as nn


class Tail(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)[:, 2:, :].pow(2).mean()  # SLICE-LINE


device = torch.device("neuron")
model = Tail().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step_fn = torch.compile(model, backend="neuron", fullgraph=True)
for step in range(4):
    loss = step_fn(torch.randn(2, 5, 4, device=device))
    loss.backward()
    opt.step()
    opt.zero_grad()
