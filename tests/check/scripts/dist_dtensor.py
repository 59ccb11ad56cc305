"""Crafted port: tensor parallelism with DTensor (ColwiseParallel/RowwiseParallel) on a neuron mesh."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 16)
        self.down = nn.Linear(16, 8)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("neuron")
mesh = init_device_mesh("neuron", (int(os.environ["WORLD_SIZE"]),))
torch.manual_seed(0)
model = MLP().to(torch.device("neuron", local_rank))
model = parallelize_module(model, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    x = torch.randn(4, 8).to("neuron")
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
