"""Crafted port: a lazy module (LazyLinear, as torchrl's MLP builds them) placed on the device and
trained: its UninitializedParameter has no shape until the first forward."""
import torch
import torch.nn as nn



class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.LazyLinear(16)
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x)))


device = torch.device("neuron")
model = Net().to(device)
model(torch.zeros(2, 8, device=device))  # materializes the lazy weights
model.compile(backend="neuron", dynamic=False)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(4, 8).to(device)
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
