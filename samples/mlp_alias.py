"""MLP classifier on synthetic tabular data, written with `import torch as th`.

Uses the from-imported CUDA AMP API (`from torch.cuda.amp import autocast, GradScaler`),
plain Adam and per-step loss printing.

    python mlp_alias.py --steps 6
"""
import argparse
import math
import os
import random

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F
from torch.cuda.amp import autocast, GradScaler


class MLP(nn.Module):
    def __init__(self, in_dim=20, hidden=64, n_classes=4, p_drop=0.0):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden),
            nn.ReLU(),
            nn.Dropout(p_drop),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, n_classes),
        )

    def forward(self, x):
        return self.net(x)


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    th.manual_seed(seed)
    th.cuda.manual_seed_all(seed)


def synthetic_batches(n_batches, batch_size, in_dim, n_classes, seed):
    """Linearly separable-ish blobs: the label is the argmax of a fixed projection."""
    g = th.Generator().manual_seed(seed)
    proj = th.randn(in_dim, n_classes, generator=g)
    for _ in range(n_batches):
        x = th.randn(batch_size, in_dim, generator=g)
        y = (x @ proj + 0.1 * th.randn(batch_size, n_classes, generator=g)).argmax(dim=1)
        yield x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 6)))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--in-dim", type=int, default=20)
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--amp", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()

    set_seed(args.seed)
    model = MLP(args.in_dim, 64, args.classes).cuda()
    optimizer = th.optim.Adam(model.parameters(), lr=1e-3)
    scaler = GradScaler(enabled=args.amp)

    losses = []
    model.train()
    for step, (x, y) in enumerate(synthetic_batches(args.steps, args.batch_size, args.in_dim,
                                                    args.classes, args.seed)):
        x, y = x.cuda(), y.cuda()
        optimizer.zero_grad()
        with autocast(enabled=args.amp):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        if not math.isfinite(loss.item()):
            raise RuntimeError(f"loss is {loss.item()} at step {step}, stopping")
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
        print(f"step {step} loss {loss.item():.4f}")

    print(f"mean loss {sum(losses) / len(losses):.4f} over {len(losses)} steps")


if __name__ == "__main__":
    main()
