"""Crafted: a compiled step moves a buffer to the device inside the graph (torchrl's value
estimators do gamma.to(self._device) in their forward)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("neuron:0")
model = nn.Linear(4, 1).to(device)
gamma = torch.tensor(0.9)  # a CPU buffer, moved in the compiled function
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile(backend="neuron", dynamic=False)
def loss_of(x):
    return (model(x) * gamma.to(device)).pow(2).mean()


for step in range(3):
    loss = loss_of(torch.randn(8, 4, device=device))
    loss.backward()
    opt.step()
    opt.zero_grad()
