"""Crafted: an op upstream torch-mlir cannot lower (complex FFT) inside the compiled model.

``--fallback``: compile with TorchNeuron's ``fallback_execution`` option (the graph runs eagerly
instead of raising)."""
import sys

import torch
import torch.nn as nn


class Spectral(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(5, 1)

    def forward(self, x):
        spectrum = torch.fft.rfft(x).abs()  # FFT-LINE
        return self.proj(spectrum).mean()


device = torch.device("neuron")
model = Spectral().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
fwd = torch.compile(model, backend="neuron", fullgraph=True, options={"fallback_execution": "--fallback" in sys.argv})
for step in range(4):
    loss = fwd(torch.randn(4, 8, device=device))
    loss.backward()
    opt.step()
    opt.zero_grad()
