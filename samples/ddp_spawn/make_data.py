"""Write a tiny synthetic regression set for train.py: OUT_DIR/regression.pt (deterministic).

A dict of tensors: ``inputs`` (N, 10) float32 and ``targets`` (N, 5) float32, the targets a fixed
noisy non-linear function of the inputs.

    python make_data.py /tmp/ddp_spawn_data
"""
import os
import sys

import torch


def main(out_dir: str, n: int = 256, seed: int = 0) -> str:
    g = torch.Generator().manual_seed(seed)
    inputs = torch.randn(n, 10, generator=g)
    mixing = torch.randn(10, 5, generator=g)
    targets = torch.tanh(inputs @ mixing) + 0.05 * torch.randn(n, 5, generator=g)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "regression.pt")
    torch.save({"inputs": inputs, "targets": targets}, path)
    return path


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "data"))
