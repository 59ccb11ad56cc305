"""An original that imports a CUDA-only library: parity must give no verdict."""
import bitsandbytes  # noqa: F401
import torch

print(torch.zeros(1))
