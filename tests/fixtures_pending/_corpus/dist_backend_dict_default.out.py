import torch
import torch.distributed as dist


def init_distributed(device_type, rank, world_size):
    dist.init_process_group(
        backend={"npu": "hccl", "xpu": "xccl"}.get(device_type, "neuron"),
        rank=rank,
        world_size=world_size,
    )
    return torch.device(device_type, rank)
