import torch


def autocast(enabled, device="neuron" if torch.accelerator.is_available() else "cpu"):
    return torch.amp.autocast(device, enabled=enabled, dtype=torch.bfloat16)


def train(model, loader, opt, amp):
    for batch in loader:
        with autocast(amp):
            loss = model(batch).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
