"""Crafted port: torchrun-style DDP with init_process_group(device_id=...) and torch.accelerator."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
device = torch.device("neuron", local_rank)
dist.init_process_group(device_id=device)
assert dist.get_backend() == dist.get_default_backend_for_device("neuron") == "neuron", dist.get_backend()
torch.accelerator.set_device_index(local_rank)
assert torch.accelerator.current_device_index() == local_rank
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
model = DDP(torch.compile(net, backend="neuron"), device_ids=[local_rank])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(local_rank)
for step in range(6):
    x = torch.randn(4, 8, generator=g).to(device)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
torch.accelerator.synchronize()
dist.destroy_process_group()
