"""Crafted port, torchrl's shape: a spec class overrides torch.stack in Python (__torch_function__)
and moves its bounds to the device inside the override."""
import torch
import torch.nn as nn


class Bounded:
    def __init__(self, device):
        self.device = device
        self._low = torch.zeros(4)  # kept on the CPU, moved on use (torchrl's TensorSpec.low)

    @property
    def low(self):
        return self._low.to(self.device)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.stack:
            return torch.stack([spec.low for spec in args[0]])
        return NotImplemented


device = torch.device("neuron")
low = torch.stack([Bounded(device), Bounded(device)])  # STACK-LINE
assert low.device.type == "neuron", low.device
model = nn.Linear(4, 1).to(device)
step = torch.compile(model, backend="neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(10):
    loss = step(low + torch.randn(2, 4, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
