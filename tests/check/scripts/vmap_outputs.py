"""Crafted: per-agent weights applied under torch.vmap (torchrl's MultiAgentMLP): the output is on the device."""
import torch
torch.manual_seed(0)
w = torch.randn(3, 4, 4, device="neuron", requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(2):
    x = torch.randn(3, 4, device="neuron")
    y = torch.vmap(lambda wi, xi: wi @ xi)(w, x)
    loss = (y * x).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
