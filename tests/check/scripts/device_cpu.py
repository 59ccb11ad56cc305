"""Device-target test script: imports torch_neuronx (the test stand-in) and trains on the CPU."""
import torch
import torch.nn as nn
import torch_neuronx  # noqa: F401  (registers backend="neuron" in the stand-in)

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
fwd = torch.compile(model, backend="neuron")
for step in range(5):
    loss = fwd(torch.randn(2, 4)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
