"""Claims the compile (NRN4xx) and optimizer (NRN5xx) rules rest on, checked against torch itself,
plus the CLI switch that turns compile insertion off."""

from __future__ import annotations

import inspect

import pytest
from click.testing import CliRunner

from porter.cli import cli
from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.results import Success
from porter.rules._lib.optim import WEIGHT_DECAY_INDEX
from porter.rules._tables.compile import COMPILE_KEYWORDS, cuda_only_option

torch = pytest.importorskip("torch")


def test_module_compile_keeps_state_dict_keys() -> None:
    """Why NRN411 inserts ``model.compile(...)`` rather than ``model = torch.compile(model)``."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    keys = list(model.state_dict())
    model.compile(backend="eager", dynamic=False)
    assert list(model.state_dict()) == keys
    wrapped = torch.compile(torch.nn.Sequential(torch.nn.Linear(2, 2)), backend="eager")
    assert all(key.startswith("_orig_mod.") for key in wrapped.state_dict())


def test_compile_keywords_match_torch() -> None:
    """NRN401 recognises ``model.compile(...)`` by torch.compile's keywords."""
    params = inspect.signature(torch.compile).parameters
    assert COMPILE_KEYWORDS == {name for name in params if name != "model"}


def test_adam_and_adamw_share_positional_order() -> None:
    """NRN502 keeps positional arguments when it renames Adam to AdamW."""
    adam = list(inspect.signature(torch.optim.Adam).parameters)
    adamw = list(inspect.signature(torch.optim.AdamW).parameters)
    assert adam[: WEIGHT_DECAY_INDEX + 2] == adamw[: WEIGHT_DECAY_INDEX + 2]
    assert adam[WEIGHT_DECAY_INDEX] == "weight_decay"  # after params, lr, betas, eps
    assert inspect.signature(torch.optim.AdamW).parameters["weight_decay"].default == 0.01  # hence written out


def _train(optimizer_factory: object, steps: int = 5) -> torch.Tensor:
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    optimizer = optimizer_factory(model.parameters())  # type: ignore[operator]
    data = torch.randn(16, 8)
    for _ in range(steps):
        optimizer.zero_grad()
        model(data).square().mean().backward()
        optimizer.step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_adam_without_weight_decay_is_fused_adamw_with_zero_decay() -> None:
    """The NRN502 rewrite changes no update (fused AdamW runs on CPU in torch 2.13 too)."""
    adam = _train(lambda p: torch.optim.Adam(p, lr=1e-2))
    adamw = _train(lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.0, fused=True))
    torch.testing.assert_close(adamw, adam, rtol=1e-6, atol=1e-7)


def test_adam_with_weight_decay_differs_from_adamw() -> None:
    """Why Adam with weight decay stays Adam: L2 decay is not AdamW's decoupled decay."""
    adam = _train(lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1))
    adamw = _train(lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1))
    assert not torch.allclose(adam, adamw)


@pytest.mark.parametrize(
    ("key", "dropped"),
    [("triton.cudagraphs", True), ("max_autotune", True), ("epilogue_fusion", True), ("model_name", False), ("custom", False)],
)
def test_cuda_only_options(key: str, dropped: bool) -> None:
    assert cuda_only_option(key) is dropped


_SCRIPT = b"""import torch
from models import Net

model = Net().cuda()
optimizer = torch.optim.AdamW(model.parameters())
"""


def test_no_compile_insertion_flag(tmp_path: object) -> None:
    path = tmp_path / "train.py"  # type: ignore[operator]
    path.write_bytes(_SCRIPT)
    with_insertion = CliRunner().invoke(cli, ["migrate", "--select", "NRN411", str(path)])
    without = CliRunner().invoke(cli, ["migrate", "--select", "NRN411", "--no-compile-insertion", str(path)])
    assert "NRN411" in with_insertion.output
    assert "NRN411" not in without.output


def test_insertion_only_in_files_being_ported() -> None:
    cpu_only = _SCRIPT.replace(b".cuda()", b"")
    assert not isinstance(port_source(cpu_only, "t.py", Options(select=("NRN411",))), Success)
    ported = port_source(cpu_only, "t.py", Options(select=("NRN411",), all_files=True))
    assert isinstance(ported, Success) and b"model.compile(" in ported.new


def test_module_compile_of_a_torch_nn_class_compiles_nothing() -> None:
    """Why NRN411 marks (NRN412) instead of inserting when the model is ``nn.Sequential(...)``:
    ``Module.compile`` compiles ``_call_impl``, and Dynamo skips torch's own frames."""
    graphs: list[int] = []

    def counting(gm: torch.fx.GraphModule, _inputs: object) -> object:
        graphs.append(1)
        return gm.forward

    native = torch.nn.Sequential(torch.nn.Linear(4, 4))
    native.compile(backend=counting, dynamic=False)
    native(torch.randn(2, 4))
    assert graphs == []

    class Wrapper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(4, 4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(x)

    mine = Wrapper()
    mine.compile(backend=counting, dynamic=False, fullgraph=True)
    mine(torch.randn(2, 4))
    assert graphs == [1]
