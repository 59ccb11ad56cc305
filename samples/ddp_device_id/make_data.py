"""Write a tiny synthetic image-classification set for train.py: OUT_DIR/digits.pt (deterministic).

A dict: ``images`` uint8 (N, 1, 16, 16) and ``labels`` int64 (N,), 4 classes, each class a
different bright bar (row, column or diagonal) on noise.

    python make_data.py /tmp/ddp_device_id_data
"""
import os
import sys

import torch


def main(out_dir: str, n: int = 256, size: int = 16, seed: int = 0) -> str:
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (n,), generator=g)
    images = torch.randint(0, 60, (n, 1, size, size), generator=g, dtype=torch.uint8)
    pos = torch.randint(2, size - 2, (n,), generator=g)
    eye = torch.eye(size, dtype=torch.bool)
    for i in range(n):
        c, p = int(labels[i]), int(pos[i])
        if c == 0:
            images[i, 0, p, :] = 230
        elif c == 1:
            images[i, 0, :, p] = 230
        elif c == 2:
            images[i, 0][eye] = 230
        else:
            images[i, 0][eye.flip(1)] = 230
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "digits.pt")
    torch.save({"images": images, "labels": labels}, path)
    return path


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "data"))
