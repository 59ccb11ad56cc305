"""Crafted: torchrl's collector split. The model trains on the device; a CPU copy of it acts on CPU
data and takes the weights in with copy_ / _foreach_copy_ (collector.update_policy_weights_()).
Copying across devices is legal: the CPU copy stays on the CPU, so acting with it mixes nothing."""
import copy

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 1).to("neuron")
actor = copy.deepcopy(model).to("cpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    with torch.no_grad():
        obs = torch.randn(8, 4)
        act = actor(obs)  # CPU weights, CPU data
    x = obs.to("neuron")
    loss = (model(x) - act.to("neuron")).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    with torch.no_grad():
        torch._foreach_copy_(list(actor.parameters()), list(model.parameters()))
        actor.weight.copy_(model.weight)
