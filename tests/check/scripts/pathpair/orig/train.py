"""Crafted original: imports the helpers package next to it."""
import helpers
import torch

assert helpers.WHO == "orig", helpers.__file__
x = torch.ones(2, device="cuda", requires_grad=True)
(x * 2).sum().backward()
