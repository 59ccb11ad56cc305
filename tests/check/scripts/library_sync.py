"""Crafted: a library the script calls syncs every step and breaks the compiled graph: the findings
are named at the script's own lines that call into it, the library's line said in the message."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "libsite", "site-packages"))
import steplib  # noqa: E402

device = torch.device("neuron")
model = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def forward(x):
    return steplib.noisy(model(x))  # CALLS-NOISY


step_fn = torch.compile(forward, backend="neuron")
for step in range(6):
    x = steplib.with_cpu_bias(torch.randn(4, 8).to(device))  # CALLS-MIX
    loss = steplib.checked(step_fn(x).pow(2).mean())  # CALLS-LIB
    loss.backward()
    opt.step()
    opt.zero_grad()
