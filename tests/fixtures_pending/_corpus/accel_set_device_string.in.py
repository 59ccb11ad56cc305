"""Pin the default device before building the policy (torchrl expert-iteration shape)."""

import torch


def setup_environment():
    if not torch.cuda.is_available():
        raise RuntimeError("CUDA is required for training")
    torch.set_default_dtype(torch.float32)
    if torch.cuda.is_available():
        torch.cuda.set_device("cuda:0")


def pin(rank):
    torch.cuda.set_device(f"cuda:{rank}")
