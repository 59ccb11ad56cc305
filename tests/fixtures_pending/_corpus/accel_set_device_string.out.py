"""Pin the default device before building the policy (torchrl expert-iteration shape)."""

import torch


def setup_environment():
    if not torch.accelerator.is_available():
        raise RuntimeError("CUDA is required for training")
    torch.set_default_dtype(torch.float32)
    if torch.accelerator.is_available():
        torch.accelerator.set_device_index(0)


def pin(rank):
    torch.accelerator.set_device_index(f"{torch.accelerator.current_accelerator().type}:{rank}")
