import os
from datetime import timedelta

import torch
import torch.distributed as dist


def setup_ddp(rank, world_size):
    device_type = "neuron"
    dist.init_process_group(
        backend={"xpu": "xccl"}.get(device_type, "neuron" if torch.accelerator.is_available() else "gloo"),
        timeout=timedelta(hours=1),
        rank=rank,
        world_size=world_size,
    )
    torch.neuron.set_device(rank)
    return torch.device(device_type, rank)
