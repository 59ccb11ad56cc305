"""Crafted: a fused AdamW step inside a compiled update (torchrl's dqn_cartpole after porting):
Dynamo runs the optimizer's _init_group itself while tracing, so its state (exp_avg = zeros_like(p),
the fused step counters) must still be on the parameters' device, not read as CPU/neuron mixing."""
import torch
import torch.nn as nn

device = torch.device("neuron")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0, fused=True)


def update(x: torch.Tensor) -> torch.Tensor:
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()


update = torch.compile(update, backend="neuron", dynamic=False)
x = torch.randn(4, 8, device=device)
for step in range(4):
    update(x)
