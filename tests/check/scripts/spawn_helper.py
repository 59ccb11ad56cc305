"""Crafted: a helper process (spawned, as torchrl's multi-process collectors start their workers) acts
with a compiled copy of a policy on the host and produces the batches; the launcher trains on them."""
import multiprocessing as mp

import torch


def produce(queue, n):
    generator = torch.Generator().manual_seed(1)
    policy = torch.compile(torch.nn.Linear(8, 8))
    with torch.no_grad():
        for _ in range(n):
            queue.put(policy(torch.randn(16, 8, generator=generator)).numpy())


if __name__ == "__main__":
    torch.manual_seed(0)
    context = mp.get_context("spawn")
    queue = context.Queue()
    worker = context.Process(target=produce, args=(queue, 3))
    worker.start()
    model = torch.nn.Linear(8, 1).to("neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    forward = torch.compile(model, backend="neuron")
    for _ in range(3):
        x = torch.from_numpy(queue.get()).to("neuron")
        loss = forward(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    worker.join()
