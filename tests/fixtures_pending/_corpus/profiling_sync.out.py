import time

import torch


def train(model, loader, opt, profiling):
    model.to("neuron")
    for step, batch in enumerate(loader):
        start = time.perf_counter()
        loss = model(batch.to("neuron")).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if profiling:
            torch.neuron.synchronize()
            print(step, time.perf_counter() - start)
