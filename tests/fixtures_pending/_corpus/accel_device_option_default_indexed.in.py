"""Benchmark CLI shaped like torchrl's GRU-reset benchmark: an indexed CUDA default, read on every host."""
import argparse

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--policy-device", default="cuda:1", help="where the policy runs")
    args = parser.parse_args()
    device = torch.device(args.device)
    x = torch.randn(8, 8, device=device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    print(x.sum().item(), args.policy_device)


if __name__ == "__main__":
    main()
