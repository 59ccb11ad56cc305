"""Stand-in ``torch_neuronx`` for porter check's emulated target. NOT TorchNeuron.

Put on the checked script's ``sys.path`` only (never installed), so that library code which detects
TorchNeuron with ``importlib.util.find_spec("torch_neuronx")`` (transformers 5.x, accelerate) takes the
branch it takes on Trainium. The ``neuron`` device itself is set up by porter's harness before the
script runs; importing this module changes nothing.
"""

from __future__ import annotations

__version__ = "0.0.0+porter.emulated"
EMULATED = True


def _neuron():  # type: ignore[no-untyped-def]
    import torch

    return torch.neuron


def get_fallback_ops() -> list[str]:
    """The emulated device runs every op on the CPU; it cannot say which ops TorchNeuron lacks.
    An empty list here means "unknown", and the check's report says so."""
    try:
        from porter.check.harness.state import STATE

        STATE.note("the script called torch_neuronx.get_fallback_ops(): the emulation cannot know which ops "
                   "TorchNeuron falls back to the CPU for, so it returned [] (unknown, not none)")
    except ImportError:  # outside the check's harness: nothing to note
        pass
    return []


def get_executed_ops() -> list[str]:
    return []


def clear_op_tracking() -> None:
    return None


def get_dynamo_metrics():  # type: ignore[no-untyped-def]
    return _neuron().get_dynamo_metrics()


def reset_dynamo_metrics() -> None:
    _neuron().reset_dynamo_metrics()


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> int:
    return 0


def set_device(index: int) -> None:
    _neuron().set_device(index)


def synchronize(device=None) -> None:  # type: ignore[no-untyped-def]
    return None
