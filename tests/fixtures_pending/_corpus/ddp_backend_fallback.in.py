import os
from datetime import timedelta

import torch
import torch.distributed as dist


def setup_ddp(rank, world_size):
    device_type = "cuda"
    torch.cuda.set_device(rank)
    dist.init_process_group(
        backend={"xpu": "xccl"}.get(device_type, "nccl" if dist.is_nccl_available() else "gloo"),
        timeout=timedelta(hours=1),
        rank=rank,
        world_size=world_size,
    )
    return torch.device(device_type, rank)
