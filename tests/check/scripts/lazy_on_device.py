"""Crafted port: lazy layers created on the device (torchrl's MLP: LazyLinear(..., device=device)),
never moved: their parameters materialize at the first forward, where they were created."""
import torch
import torch.nn as nn

device = torch.device("neuron")
torch.manual_seed(0)
model = nn.Sequential(nn.LazyLinear(16, device=device), nn.Tanh(), nn.Linear(16, 1, device=device))
model(torch.zeros(2, 8, device=device))  # FIRST-FORWARD: materializes the lazy weight and bias
assert model[0].weight.device.type == "neuron", model[0].weight.device
step = torch.compile(model, backend="neuron")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = step(torch.randn(4, 8, device=device)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
