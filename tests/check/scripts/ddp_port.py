"""Ported DDP script: init_process_group("neuron") before device use, DDP with device_ids."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group(backend="neuron")
local_rank = int(os.environ["LOCAL_RANK"])
torch.neuron.set_device(local_rank)
model = DDP(nn.Linear(4, 1).to(f"neuron:{local_rank}"), device_ids=[local_rank])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    loss = model(torch.randn(2, 4, device="neuron")).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
