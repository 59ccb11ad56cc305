"""Crafted, shaped like torchrl's crossq/td3 updates: two compiled update functions step ONE optimizer.
`update_critic` runs at most steps, `update_both` (actor too) at every third. The optimizer's step
frame is compiled for each caller: Dynamo guards its backend object (one per torch.compile call) and
which grads are None; the actor's state that `update_both` creates makes `update_critic` compile it
once more. After that nothing new is compiled (warm-up). With --per-step a Python float that changes
every step reaches the critic's graph: it recompiles at every step (instability)."""
import sys

import torch
import torch.nn as nn

torch._dynamo.config.automatic_dynamic_shapes = False
per_step = "--per-step" in sys.argv
device = torch.device("neuron")

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
critic = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=1e-3)


def update_critic(obs: torch.Tensor, action: torch.Tensor, scale: float) -> torch.Tensor:
    optimizer.zero_grad(set_to_none=True)
    loss = critic(torch.cat([obs, action], -1)).pow(2).mean() * scale
    loss.backward()
    optimizer.step()
    return loss.detach()


def update_both(obs: torch.Tensor, action: torch.Tensor, scale: float) -> torch.Tensor:
    optimizer.zero_grad(set_to_none=True)
    q = critic(torch.cat([obs, action], -1)).pow(2).mean()
    pi = -critic(torch.cat([obs, actor(obs)], -1)).mean()
    loss = (q + pi) * scale
    loss.backward()
    optimizer.step()  # SHARED-LINE
    return loss.detach()


update_critic = torch.compile(update_critic, backend="neuron")
update_both = torch.compile(update_both, backend="neuron")
for step in range(8):
    obs, action = torch.randn(16, 4, device=device), torch.randn(16, 2, device=device)
    scale = float(step + 1) if per_step else 1.0
    (update_both if step % 3 == 2 else update_critic)(obs, action, scale)
