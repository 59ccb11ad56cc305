"""Crafted: Hydra's shape. The error is caught, its traceback printed (with a message longer than
the kept stderr tail, like a dispatcher's kernel list), then sys.exit(1)."""
import sys
import traceback

import torch


def build():
    raise NotImplementedError("Could not run 'aten::empty' with arguments from the 'CUDA' backend.\n" + "Kernel: registered\n" * 800)  # RAISE-LINE


try:
    build()
except Exception:
    traceback.print_exc()
    sys.exit(1)
