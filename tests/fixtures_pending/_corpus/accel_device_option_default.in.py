"""Training options whose device defaults to CUDA; a helper resolves the option later and falls
back to the CPU when that device is not there, so the script also trains on a CPU-only host
(open_clip shape: the option, the lookup default and the fallback live in different functions).
"""

import argparse
import warnings

import torch


def parse_args(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", type=str, help="Accelerator to use.")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=10)
    return parser.parse_args(argv)


def device_available(device_type):
    if device_type == "cuda":
        return torch.cuda.is_available()
    if device_type == "mps":
        return torch.backends.mps.is_available()
    return device_type == "cpu"


def init_device(args):
    device = getattr(args, "device", "cuda")
    if not device_available(device.split(":", 1)[0]):
        warnings.warn(f"Device {device} was not available, falling back to CPU.")
        device = "cpu"
    args.device = device
    return torch.device(device)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def main(argv=None):
    args = parse_args(argv)
    device = init_device(args)
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for _ in range(args.steps):
        batch = torch.randn(4, 8, device=device)
        loss = model(batch).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
