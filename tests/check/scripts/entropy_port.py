"""Crafted port: every draw is unseeded, from the OS (an unseeded gym env's SeedSequence(None),
numpy's default_rng(), a fresh random.Random(), os.urandom, a set of strings' order)."""
import os
import random

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng()  # no seed: OS entropy
legacy = np.random.RandomState()  # no seed: OS entropy too
pyrng = random.Random()  # no seed: C's own urandom
salt = int.from_bytes(os.urandom(4), "little") / 2**32
order = list({"alpha", "beta", "gamma", "delta"})  # set order: the hash seed
device = torch.device("neuron")
model = nn.Linear(8, 1).to(device)
step_fn = torch.compile(model, backend="neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = rng.standard_normal((4, 8)) + legacy.rand(4, 8) * pyrng.random() + salt
    x = x[:, [order.index(k) for k in ("alpha", "beta", "gamma", "delta")] + [4, 5, 6, 7]]
    loss = step_fn(torch.from_numpy(x.astype("float32")).to(device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
