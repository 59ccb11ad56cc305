"""Crafted: a library that copies to the host only the tensors not already there, asking
`tensor.is_cpu` (tensordict's `to("cpu")` skips the leaves whose is_cpu is True, as torchrl's
rollout does with `auto_cast_to_device=True` after the policy): the device's outputs come back as
host copies and are then used with host tensors."""
import torch
import torch.nn as nn


def to_host(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    return [t if t.is_cpu else t.to("cpu", non_blocking=True) for t in tensors]


torch.manual_seed(0)
model = nn.Linear(3, 1).to("neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = torch.zeros(1, 1)  # a host accumulator, as an env's episode reward
for step in range(2):
    if step == 0:
        with torch.no_grad():
            (action,) = to_host([model(torch.randn(1, 3).to("neuron"))])
        assert action.is_cpu and not model.weight.is_cpu
        total = total + action  # host + host
    x = torch.randn(8, 3, device="neuron")
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
