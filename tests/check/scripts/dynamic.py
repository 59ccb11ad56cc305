"""Crafted: torch.compile(dynamic=True) - symbolic sizes, which TorchNeuron rejects."""
import torch
import torch.nn as nn

model = nn.Linear(8, 1).to("neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
fwd = torch.compile(model, backend="neuron", dynamic=True)  # DYNAMIC-LINE
for step in range(4):
    loss = fwd(torch.randn(4 + step, 8, device="neuron")).mean()  # CALL-LINE
    loss.backward()
    opt.step()
    opt.zero_grad()
