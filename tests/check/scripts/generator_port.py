"""Crafted port: a recipe's own generator on the training device (torchtune's PPO recipe makes
``torch.Generator(self._device)`` and samples with it), on Neuron."""
import torch
import torch.nn as nn

device = torch.device("neuron")
rng = torch.Generator(device).manual_seed(7)
assert isinstance(rng, torch.Generator) and isinstance(torch.default_generator, torch.Generator)
model = nn.Linear(8, 4).to(device)
model = torch.compile(model, backend="neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(16, 8, device=device, generator=rng)
    probs = torch.softmax(model(x), dim=-1)
    picked = torch.multinomial(probs.detach(), 1, generator=rng)
    loss = -torch.log(probs.gather(1, picked)).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
