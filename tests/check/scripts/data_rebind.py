"""Crafted: a buffer object rebound to the moved buffer's data (tensordict's TensorDictParams._apply
does val.data = moved.data when a module moves): the old object is on the device now."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
scale = torch.ones(1)  # a CPU tensor object kept by another holder
model.to("neuron")
scale.data = torch.ones(1, device="neuron").data
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x = torch.randn(8, 4, device="neuron")
    loss = (model(x) * scale).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    assert not scale.is_set_to(model.weight)
