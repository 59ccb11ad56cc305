"""Crafted port: FSDP2 (fully_shard) on the neuron device under torchrun."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.proj(x)) + x


local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group(backend="neuron")
torch.neuron.set_device(local_rank)
device = torch.device("neuron", local_rank)
torch.manual_seed(0)
model = nn.Sequential(Block(8), Block(8), nn.Linear(8, 1)).to(device)
for layer in model:
    if isinstance(layer, Block):
        fully_shard(layer)
fully_shard(model)
model = torch.compile(model, backend="neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(local_rank)
for step in range(6):
    x = torch.randn(4, 8, generator=g).to(device)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
