"""Crafted: an optimizer stepped inside a compiled update (torchrl's scripts); the harness counts the
step with a hook that runs inside it."""
import torch, torch.nn as nn
model = nn.Linear(4, 1).to("neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def update(x):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.detach()
update = torch.compile(update, backend="neuron")
for step in range(4):
    update(torch.randn(8, 4, device="neuron"))
