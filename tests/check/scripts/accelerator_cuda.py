"""Crafted original: integer devices and torch.accelerator, as CUDA scripts write them."""
import torch
import torch.nn as nn

assert torch.accelerator.current_accelerator().type == "cuda"
assert torch.accelerator.device_count() == torch.cuda.device_count() == 2  # --nproc 2's LOCAL_WORLD_SIZE
torch.accelerator.set_device_index(1)
assert torch.accelerator.current_device_index() == 1 and torch.cuda.current_device() == 1
torch.cuda.set_device(0)
model = nn.Linear(4, 1).to(0)
model = model.to(device=0)
assert next(model.parameters()).device.type == "cuda"
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(2, 4).to(0)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch.accelerator.synchronize()
