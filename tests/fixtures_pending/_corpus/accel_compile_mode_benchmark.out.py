"""Time one recurrent module under each torch.compile mode (torchrl bench_rnn_backward shape)."""

import argparse
import time

import torch


def time_mode(module, data, compile_mode, iters, device):
    if compile_mode != "eager":
        module = torch.compile(module, fullgraph=True, dynamic=False, mode=compile_mode)
    module(data).sum().backward()
    torch.accelerator.synchronize(device)
    start = time.perf_counter()
    for _ in range(iters):
        module(data).sum().backward()
    torch.accelerator.synchronize(device)
    return (time.perf_counter() - start) / iters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--modes", default="eager,default,reduce-overhead,max-autotune")
    args = parser.parse_args()
    device = torch.device(torch.accelerator.current_accelerator().type)
    data = torch.randn(32, 64, 128, device=device)
    for mode in args.modes.split(","):
        module = torch.nn.GRU(128, 128, batch_first=True).to(device)
        print(f"{mode:>16}: {time_mode(module, data, mode, 30, device) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
