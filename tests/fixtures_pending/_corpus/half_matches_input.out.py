import torch


def profile(ops, x, device):
    x = x.to("neuron")
    results = []
    for m in ops:
        m = m.to(device)
        m = m.half() if hasattr(m, "half") and x.dtype is torch.float16 else m
        results.append(m(x))
    return results
