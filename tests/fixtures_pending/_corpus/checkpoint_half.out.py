from copy import deepcopy

import torch


def save_checkpoint(ema, path):
    snapshot = deepcopy(ema).half()  # FP16 file for export tools
    torch.save({"model": snapshot}, path)


def shrink(state_dict):
    return {k: v.half() if v.dtype is torch.float32 else v for k, v in state_dict.items()}


def train(model, loader, opt, path):
    model.to("neuron")
    for batch in loader:
        loss = model(batch.to("neuron")).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    save_checkpoint(model, path)
