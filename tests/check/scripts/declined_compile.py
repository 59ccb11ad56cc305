"""Crafted: porter declined to compile the model (an NRN413 marker): nothing compiled, said at the marker."""
import torch
import torch.nn as nn

device = torch.device("neuron")
model = nn.Linear(4, 1).to(device)
# porter: NRN413 not compiled: model is a library module whose forward swaps its parameters in per call
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    loss = model(torch.randn(2, 4, device=device)).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
