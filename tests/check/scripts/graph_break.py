"""Crafted: a data-dependent branch inside the compiled function (a graph break)."""
import torch
import torch.nn as nn

device = torch.device("neuron")
layer = nn.Linear(8, 8).to(device)
opt = torch.optim.SGD(layer.parameters(), lr=0.1)


@torch.compile(backend="neuron", fullgraph=True)
def forward(x):
    y = layer(x)
    if y.sum() > 0:  # BREAK-LINE
        y = y * 2
    return y.pow(2).mean()


for step in range(4):
    loss = forward(torch.randn(4, 8, device=device))
    loss.backward()
    opt.step()
    opt.zero_grad()
