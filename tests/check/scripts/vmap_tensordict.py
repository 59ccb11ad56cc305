"""Crafted, shaped like torchrl's SAC loss: two Q-networks' weights held in a tensor collection that is
excluded from pytree (torchrl's sac scripts call tensordict's _exclude_td_from_pytree().set()), so
torch.vmap sees it as one leaf, mapped over a host index. The class stands for tensordict's TensorDict
(not installed here): a leaf whose values() are its tensors."""
import torch


class Params:
    __module__ = "tensordict._td"  # the module the emulator recognises a tensor collection by

    def __init__(self, **tensors):
        self._tensors = tensors

    def values(self, include_nested=False, leaves_only=False):
        return list(self._tensors.values())

    def __getitem__(self, key):
        return self._tensors[key]


torch.manual_seed(0)
weight = torch.randn(2, 4, 1, device="neuron", requires_grad=True)
opt = torch.optim.SGD([weight], lr=0.1)
nets = torch.arange(2)  # which network, on the host


def q_value(params, index):
    return params["weight"][index]


for _ in range(2):
    obs = torch.randn(16, 4, device="neuron")
    weights = torch.vmap(q_value, in_dims=(None, 0))(Params(weight=weight), nets)
    values = obs @ weights  # MIX-LINE
    target = torch.randn(16, 1, device="neuron")
    loss = (values - target).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
