"""The original's emulated CUDA answers what a CUDA build answers, NCCL included."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import torch
from porter.check.harness import patches
patches.emulate_cuda_namespace()
# torchtune 0.6.1's verify_bf16_support (training/precision.py), the test an original runs before bf16
print(torch.cuda.is_available() and torch.cuda.is_bf16_supported() and torch.distributed.is_nccl_available()
      and torch.cuda.nccl.version() >= (2, 10))
"""


def test_emulated_cuda_has_nccl_for_bf16_checks() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
