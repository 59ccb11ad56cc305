"""Crafted, shaped like torchrl's compile_with_warmup around a SAC update: the update runs eagerly for
its first two calls, then compiled; its bound check syncs on the host only when not compiling (as
torchrl's TanhNormal does)."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 1).to("neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
low = torch.zeros(1, device="neuron")
high = torch.ones(1, device="neuron")


def update(x):
    if not torch.compiler.is_compiling() and not (high > low).all():  # BOUND-CHECK
        raise ValueError("high must be above low")
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.detach()


def with_warmup(fn, warmup):
    calls = 0
    compiled = None

    def run(*args):
        nonlocal calls, compiled
        calls += 1
        if calls <= warmup:
            return fn(*args)
        if compiled is None:
            compiled = torch.compile(fn, backend="neuron")
        return compiled(*args)

    return run


step = with_warmup(update, warmup=2)
for _ in range(4):
    step(torch.randn(16, 8, device="neuron"))
