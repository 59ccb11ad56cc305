"""Crafted port, tensordict's shape: a container class overrides torch.cat in Python
(__torch_function__) and, inside the override, makes a tensor on its own device (a TensorDict
keeps the device its tensors report: "neuron"). The call runs inside a compiled update."""
import torch
import torch.nn as nn


class Batch:
    def __init__(self, obs):
        self.obs = obs
        self.device = obs.device  # the device its tensor reports

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.cat:
            parts = args[0]
            flags = torch.zeros(sum(p.obs.shape[0] for p in parts), 1, device=parts[0].device)
            return Batch(torch.cat([torch.cat([p.obs for p in parts]), flags], -1))
        return NotImplemented


device = torch.device("neuron")
torch.manual_seed(0)
model = nn.Linear(5, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile(backend="neuron")
def update(a, b):
    joined = torch.cat([a, b])  # CAT-LINE
    return model(joined.obs).pow(2).mean()


for _ in range(3):
    loss = update(Batch(torch.randn(2, 4, device=device)), Batch(torch.randn(3, 4, device=device)))
    opt.zero_grad()
    loss.backward()
    opt.step()
