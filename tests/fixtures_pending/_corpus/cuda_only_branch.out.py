import torch


def setup(model, device, channels_last, profile_memory):
    if channels_last and device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    elif channels_last:
        print(f"channels_last is only used on CUDA, ignored on {device.type}")
    if profile_memory and device.type == "cuda":
        # porter: NRN104 torch.cuda.memory has no known Neuron equivalent; port by hand
        torch.cuda.memory._record_memory_history()
    return model


def can_compile(device):
    if device.type == "cuda":
        from torch.utils._triton import has_triton

        return has_triton()
    return True
