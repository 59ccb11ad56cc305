"""Crafted: the batch shrinks at step 3 (a recompile after warm-up)."""
import torch
import torch.nn as nn

torch._dynamo.config.automatic_dynamic_shapes = False
device = torch.device("neuron")
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
fwd = torch.compile(model, backend="neuron", fullgraph=True)
for step in range(6):
    batch = 4 if step < 3 else 3
    x = torch.randn(batch, 8, device=device)
    loss = fwd(x).mean()  # RECOMPILE-LINE
    loss.backward()
    opt.step()
    opt.zero_grad()
