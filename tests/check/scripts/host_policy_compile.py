"""Crafted: a CPU copy of the policy compiled with the default backend and fullgraph=True (torchrl's
collectors compile theirs so), and the update compiled for neuron without fullgraph, with a graph break."""
import copy

import torch
import torch.nn as nn

device = torch.device("neuron")
model = nn.Linear(4, 2).to(device)
policy = torch.compile(copy.deepcopy(model).to("cpu"), fullgraph=True)  # HOST-COMPILE
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile(backend="neuron", dynamic=False)
def update(x):
    y = model(x)
    torch._dynamo.graph_break()  # BREAK-LINE
    return y.pow(2).mean()


for step in range(4):
    with torch.no_grad():
        action = policy(torch.randn(2, 4))
    loss = update(torch.randn(2, 4, device=device))
    loss.backward()
    opt.step()
    opt.zero_grad()
