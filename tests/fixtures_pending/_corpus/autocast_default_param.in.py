import torch


def autocast(enabled, device="cuda"):
    return torch.amp.autocast(device, enabled=enabled)


def train(model, loader, opt, amp):
    for batch in loader:
        with autocast(amp):
            loss = model(batch).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
