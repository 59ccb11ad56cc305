"""Crafted original: its data after step 1 are rolled out from the weights it trains (an RL
script's collector, as a chaotic map), so one ulp of a weight moves every later loss."""
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
start = torch.rand(16, 4).to(device)
target = torch.rand(16, 1).to(device)
for step in range(6):
    x = start
    if step >= 2:  # the rollout: the policy's weights drive the states it next trains on
        with torch.no_grad():
            x = torch.sigmoid(start + model.weight.sum())
            for _ in range(30):
                x = 3.99 * x * (1 - x)
    loss = ((model(x) - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
