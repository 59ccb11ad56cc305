import time

import torch


def train(model, loader, opt, profiling):
    model.cuda()
    for step, batch in enumerate(loader):
        start = time.perf_counter()
        loss = model(batch.cuda()).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if profiling:
            torch.cuda.synchronize()
            print(step, time.perf_counter() - start)
