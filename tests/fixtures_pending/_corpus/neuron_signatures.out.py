import torch


def describe(device):
    device = torch.device(device)
    if device.type != "neuron":
        return "no accelerator"
    torch.neuron.set_device(device)
    return torch.neuron.get_device_name(device.index or 0)


def alloc_retries():
    # porter: NRN104 torch.cuda.memory_stats keys are CUDA caching-allocator keys ("num_alloc_retries"); the Neuron allocator's keys differ: port by hand
    stats = torch.cuda.memory_stats()
    return stats["num_alloc_retries"]
