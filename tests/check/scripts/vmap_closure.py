"""Crafted port: a vmapped function uses a device tensor from its closure and places a tensor on its
input's device (xi.device): inside vmap, xi is a functorch wrapper, on the device of what it wraps."""
import torch
torch.manual_seed(0)
w = torch.randn(4, 4, device="neuron", requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(2):
    x = torch.randn(3, 4, device="neuron")
    y = torch.vmap(lambda xi: (w @ xi) * torch.ones(4, device=xi.device))(x)  # VMAP-LINE
    loss = (y * x).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
