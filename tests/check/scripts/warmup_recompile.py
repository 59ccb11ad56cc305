"""Crafted: a loss module that sets its keys at its first call (as torchrl's losses set in_keys
lazily): its compiled forward is guarded on `_in_keys is None` and recompiles once, at step 1, then
never again (warm-up). With --per-step the step's Python float reaches the graph too: Dynamo
specializes it, so the region recompiles at every step (instability)."""
import sys

import torch
import torch.nn as nn

torch._dynamo.config.automatic_dynamic_shapes = False
per_step = "--per-step" in sys.argv
device = torch.device("neuron")


class Loss(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self._in_keys: tuple[str, ...] | None = None

    def forward(self, x: torch.Tensor, scale: float) -> torch.Tensor:
        if self._in_keys is None:
            self._in_keys = ("x",)
        return self.model(x).pow(2).mean() * scale


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = torch.compile(Loss(model), backend="neuron")
x = torch.randn(4, 8, device=device)
for step in range(6):
    loss = loss_fn(x, float(step + 1) if per_step else 1.0)  # RECOMPILE-LINE
    loss.backward()
    opt.step()
    opt.zero_grad()
