"""Unit tests for the helpers behind the device (NRN1xx) and distributed (NRN3xx) rules."""

from __future__ import annotations

import libcst as cst
import pytest

from porter.engine.changes import ImportSpec
from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.results import Success
from porter.rules._lib.device import accelerator_string, retorch, torch_import, torch_ref
from porter.rules.dist_backend import _neuron_backend


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("nccl", "neuron"),
        ("xla", "neuron"),
        ("cuda:nccl,cpu:gloo", "cpu:gloo,neuron:neuron"),
        ("cpu:gloo,cuda:nccl", "cpu:gloo,neuron:neuron"),
        ("gloo", None),
        ("cpu:gloo", None),
        ("neuron", None),
    ],
)
def test_backend_mapping(value: str, expected: str | None) -> None:
    assert _neuron_backend(value) == expected


@pytest.mark.parametrize(
    ("source", "name", "imports"),
    [
        ("import torch\n", "torch", ()),
        ("import torch as th\n", "th", ()),
        ("import torch as th\nimport torch\n", "torch", ()),
        ("from torch import cuda\n", "torch", (ImportSpec("torch"),)),
    ],
)
def test_torch_ref(source: str, name: str, imports: tuple[ImportSpec, ...]) -> None:
    module = cst.parse_module(source)
    assert torch_ref(module) == (name, imports)
    assert torch_import(module) == (() if name == "torch" and not imports else (ImportSpec("torch"),))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('"cuda"', "th.accelerator.current_accelerator().type"),
        ('"cuda:1"', 'f"{th.accelerator.current_accelerator().type}:1"'),
        ('f"cuda:{rank}"', 'f"{th.accelerator.current_accelerator().type}:{rank}"'),
    ],
)
def test_accelerator_string(source: str, expected: str) -> None:
    node = accelerator_string(cst.parse_expression(source), "th")
    assert cst.Module(body=[]).code_for_node(node) == expected


def test_retorch_leaves_other_names() -> None:
    assert retorch("torch.device(torch_xla)", "th") == "th.device(torch_xla)"


def test_accelerator_style_output_runs_on_cpu() -> None:
    """The device-generic port must still run on a machine without an accelerator where the
    original guarded itself with ``is_available()``."""
    source = (
        b"import torch\n"
        b'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        b'device_type = "cuda" if "cuda" in str(device) else "cpu"\n'
        b"x = torch.ones(2).to(device)\n"
        b'on_acc = x.is_cuda\n'
    )
    result = port_source(source, "t.py", Options(style="accelerator", select=("NRN1",)))
    assert isinstance(result, Success)
    scope: dict[str, object] = {}
    exec(compile(result.new, "t.py", "exec"), scope)  # noqa: S102 - our own generated code
    assert scope["device_type"] == "cpu"
    assert scope["on_acc"] is False


def test_neuron_style_output_keeps_the_accelerator_branch() -> None:
    """A substring test ported on one side only would make neuron count as CPU."""
    source = b'device = "cuda"\ndevice_type = "cuda" if "cuda" in device else "cpu"\n'
    result = port_source(source, "t.py", Options(select=("NRN1",)))
    assert isinstance(result, Success)
    scope: dict[str, object] = {}
    exec(compile(result.new, "t.py", "exec"), scope)  # noqa: S102 - our own generated code
    assert scope["device_type"] == "neuron"
