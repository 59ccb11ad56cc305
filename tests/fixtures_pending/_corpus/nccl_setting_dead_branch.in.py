import os
from datetime import timedelta

import torch
import torch.distributed as dist


def setup_ddp(device_arg, local_rank, rank, world_size):
    device_type = device_arg.split(":", 1)[0]
    device_type = device_type if device_type in {"npu", "xpu"} else "cuda"
    device = torch.device(device_type, local_rank)
    if device_type == "cuda":
        os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"  # enforce the timeout
    dist.init_process_group(
        backend={"npu": "hccl", "xpu": "xccl"}.get(device_type, "nccl" if dist.is_nccl_available() else "gloo"),
        timeout=timedelta(hours=3),
        rank=rank,
        world_size=world_size,
    )
    return device
