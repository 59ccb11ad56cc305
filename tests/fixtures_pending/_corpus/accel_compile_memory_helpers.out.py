"""Peak memory of a recurrent module with and without recompute, read through library helpers (torchrl shape)."""

import argparse

import torch
from torchrl import cuda_memory_stats, reset_cuda_peak_stats


class Recurrent(torch.nn.Module):
    def __init__(self, hidden, recompute):
        super().__init__()
        self.lstm = torch.nn.LSTM(hidden, hidden, num_layers=2, batch_first=True)
        self.recompute = recompute

    def forward(self, x):
        if self.recompute == "full":
            return torch.utils.checkpoint.checkpoint(self.lstm, x, use_reentrant=False)
        return self.lstm(x)


def run_one(recompute, batch, hidden, device):
    module = Recurrent(hidden, recompute).to(device)
    torch._dynamo.config.allow_rnn = True
    data = torch.randn(batch, 64, hidden, device=device)
    out, _ = module(data)
    out.pow(2).sum().backward()
    if device.type != "cpu":
        torch.accelerator.synchronize(device)
    reset_cuda_peak_stats(device)
    out, _ = module(data)
    loss = out.pow(2).sum()
    loss.backward()
    if device.type != "cpu":
        torch.accelerator.synchronize(device)
    return cuda_memory_stats(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default=torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    for recompute in ("none", "full"):
        print(recompute, run_one(recompute, 32, 256, device))


if __name__ == "__main__":
    main()
