import functools

import torch
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer


def build_policy(width, device):
    return torch.nn.Sequential(torch.nn.Linear(3, width), torch.nn.Tanh(), torch.nn.Linear(width, 1)).to(device)


def make_buffer(size, batch_size, device="cpu", shared=False):
    storage = functools.partial(LazyTensorStorage, device="cpu" if shared and str(device).startswith("neuron") else device)
    return TensorDictReplayBuffer(storage=storage(size), batch_size=batch_size, shared=shared)
