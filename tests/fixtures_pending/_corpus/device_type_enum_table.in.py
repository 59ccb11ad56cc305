"""A library's device helpers (shaped like torchtune's utils/_device.py): the host's device type is
looked up in an Enum of per-device settings, which raises for a type it does not list."""
from enum import Enum

import torch


class Accel(Enum):
    CPU = ("cpu", "gloo")
    CUDA = ("cuda", "nccl")
    XPU = ("xpu", "ccl")

    def __init__(self, kind: str, backend: str):
        self.kind = kind
        self.backend = backend

    @staticmethod
    def of(kind: str) -> "Accel":
        for member in Accel:
            if member.kind == kind:
                return member
        raise ValueError(f"unknown device type {kind}")


def host_kind() -> str:
    if torch.cuda.is_available():
        return "cuda"
    if torch.xpu.is_available():
        return "xpu"
    return "cpu"


def host_module():
    return getattr(torch, Accel.of(host_kind()).kind)


def pick_device(name: str | None = None) -> torch.device:
    device = torch.device(name or host_kind())
    if device.type in ("cuda", "xpu"):
        host_module().set_device(device.index or 0)
    return device
