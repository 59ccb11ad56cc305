"""Crafted original: its data come from a generator seeded by the clock, a source the check does not
pin (it pins the OS entropy: harness/entropy.py), so the original differs from itself."""
import time

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(time.time_ns())  # seeded by the clock: different at every run
device = torch.device("cuda")
model = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.from_numpy(rng.standard_normal((4, 8)).astype("float32")).to(device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
