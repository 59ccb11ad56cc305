"""A compiled block under non-reentrant activation checkpointing (torchtune's checkpointed layers)."""
import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
device = "neuron"


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.scale = torch.nn.Parameter(torch.ones(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.lin(x) * self.scale).relu()


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.block.compile(backend="neuron")
        self.head = torch.nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(checkpoint(self.block, x, use_reentrant=False))  # recomputed in the backward


model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(4, 8, device=device)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
