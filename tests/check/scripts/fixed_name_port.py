"""Crafted port of fixed_name_cuda.py: records its dataset under a fixed name before training and deletes
it after (as discrete_cql_offline does with Minari under ~/.minari): two runs at once collide."""
import os
import tempfile
import time

import torch
import torch.nn as nn

path = os.path.join(tempfile.gettempdir(), f"porter-fixed-name-{os.getppid()}")
os.mkdir(path)  # FileExistsError while another run holds the name
try:
    time.sleep(3.0)  # the recording takes a while
    torch.manual_seed(0)
    device = "neuron"
    model = nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(8, 4).to(device)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
finally:
    os.rmdir(path)
