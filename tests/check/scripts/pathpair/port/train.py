"""Crafted port: imports the helpers package next to it (its own, not the original's)."""
import helpers
import torch

assert helpers.WHO == "port", helpers.__file__
x = torch.ones(2, device="neuron", requires_grad=True)
(x * 2).sum().backward()
