import torch


def describe(device):
    device = torch.device(device)
    if device.type != "cuda":
        return "no accelerator"
    torch.cuda.set_device(device)
    return torch.cuda.get_device_name(device)


def alloc_retries():
    stats = torch.cuda.memory_stats()
    return stats["num_alloc_retries"]
