"""Peak memory of activation checkpointing on vs off for a small MLP stack."""
import argparse

import torch
from torch.utils.checkpoint import checkpoint


class Stack(torch.nn.Module):
    def __init__(self, width, depth, use_checkpoint):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=False) if self.use_checkpoint else layer(x)
        return x


def run_one(use_checkpoint, batch, width, depth, device):
    module = Stack(width, depth, use_checkpoint).to(device)
    x = torch.randn(batch, width, device=device, requires_grad=True)
    module(x).pow(2).sum().backward()
    torch.neuron.synchronize(device)
    torch.neuron.reset_peak_memory_stats(device)
    loss = module(x).pow(2).sum()
    loss.backward()
    torch.neuron.synchronize(device)
    return (torch.neuron.max_memory_allocated(device) if torch.accelerator.is_available() else 0) / 2**30


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=8)
    args = parser.parse_args()
    if not torch.accelerator.is_available():
        print("no CUDA device: memory stats are zero, skipping")
        return
    device = torch.device("neuron")
    for use_checkpoint in (False, True):
        peak = run_one(use_checkpoint, args.batch, args.width, args.depth, device)
        print(f"checkpoint={use_checkpoint}: peak {peak:.3f} GiB")


if __name__ == "__main__":
    main()
