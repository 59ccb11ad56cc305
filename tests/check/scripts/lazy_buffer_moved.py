"""Crafted port: a module holding a lazy buffer (torchrl's CatFrames registers an
UninitializedBuffer per key) moved to the device before the buffer has a shape, then materialized
at its first call and used with device tensors."""
import torch
import torch.nn as nn
from torch.nn.parameter import UninitializedBuffer


class History(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("frames", UninitializedBuffer(device="cpu"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if isinstance(self.frames, UninitializedBuffer):
            self.frames.materialize(x.shape, device=x.device)
            self.frames.zero_()
        self.frames.mul_(0.5).add_(x.detach())
        return x + self.frames


device = torch.device("neuron")
torch.manual_seed(0)
history = History().to(device)  # the lazy buffer moves with its module, shapeless
model = nn.Linear(4, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    loss = history(model(torch.randn(8, 4, device=device))).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
