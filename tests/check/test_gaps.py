"""The known-gap table is true today, and the decompositions that close the other gaps work.

Runs AOTAutograd + upstream torch-mlir in-process on tiny modules (no script, no subprocess).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from porter.check import gaps, lowering

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


def lower_training(module: nn.Module, x: torch.Tensor, table: dict[Any, Any] | None = None,
                   prepare: Callable[..., Any] = lowering.prepare, math_sdpa: bool = True) -> dict[str, list[str]]:
    """Compile one forward+backward; return {graph kind: failing ops} ([] = lowered)."""
    from torch._dynamo.backends.common import aot_autograd
    from torch.nn.attention import SDPBackend, sdpa_kernel

    result: dict[str, list[str]] = {}

    def compiler(kind: str) -> Callable[..., Any]:
        def compile_graph(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
            ready = prepare(gm)
            lowered = lowering.lower(ready)
            result[kind] = [] if lowered.ok else sorted({lowering.op_name(n.target) for n, _ in lowering.failing_nodes(ready)}) or ["<graph>"]
            return gm.forward

        return compile_graph

    backend = aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                           decompositions=lowering.decomposition_table() if table is None else table,
                           keep_inference_input_mutations=True)  # as the emulated backend (and TorchNeuron)
    torch._dynamo.reset()
    backends = [SDPBackend.MATH] if math_sdpa else [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
    with sdpa_kernel(backends):
        out = torch.compile(module, backend=backend)(x)
    out.float().sum().backward()
    return result


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class ConvPool(nn.Module):
    """F.max_pool2d(x, 2) passes stride=[] (the default) - the form torch-mlir misreads."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(64, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.max_pool2d(F.relu(self.bn(self.conv(x))), 2).flatten(1))


def conv_pool() -> nn.Module:
    return ConvPool()


# One reproducer per known-gap entry: each must still fail upstream, with exactly that op.
GAP_CASES: dict[str, Callable[[], tuple[nn.Module, torch.Tensor]]] = {
    "aten.convolution_backward": lambda: (nn.Sequential(nn.ConvTranspose2d(3, 4, 2, stride=2)), torch.randn(2, 3, 4, 4)),
    "aten.avg_pool2d_backward": lambda: (nn.Sequential(nn.Conv2d(3, 4, 3), nn.AvgPool2d(3, stride=2)), torch.randn(2, 3, 9, 9)),
}


def test_every_known_gap_has_a_reproducer() -> None:
    assert set(GAP_CASES) == set(gaps.KNOWN_GAPS)


@pytest.mark.parametrize("op", sorted(GAP_CASES))
def test_known_gap_still_fails_upstream(op: str) -> None:
    module, x = GAP_CASES[op]()
    result = lower_training(module, x)
    assert result["forward"] == []
    assert op in result["backward"], result
    assert all(gaps.is_known_gap(o) for o in result["backward"])


def test_conv_batchnorm_maxpool_training_graphs_lower() -> None:
    result = lower_training(conv_pool(), torch.randn(2, 3, 8, 8))
    assert result == {"forward": [], "backward": []}


def test_without_porters_fixes_conv_pool_does_not_lower() -> None:
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    result = lower_training(conv_pool(), torch.randn(2, 3, 8, 8), table=dict(get_decomposition_table()),
                            prepare=lowering.strip_none_outputs)
    assert "aten.max_pool2d_with_indices" in result["forward"], result  # default stride misread
    assert "aten.copy_" in result["forward"], result  # BatchNorm's running-stat updates, in place
    assert "aten.max_pool2d_with_indices_backward" in result["backward"], result


def test_sdpa_training_graphs_lower_on_the_math_path() -> None:
    assert lower_training(Attention(), torch.randn(2, 5, 8)) == {"forward": [], "backward": []}


def test_sdpa_cpu_flash_backward_does_not_lower() -> None:
    result = lower_training(Attention(), torch.randn(2, 5, 8), math_sdpa=False)
    assert "aten._scaled_dot_product_flash_attention_for_cpu_backward" in result["backward"]


def test_max_pool_backward_decomposition_matches_aten() -> None:
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    out, idx = torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
    grad = torch.randn_like(out)
    expected = torch.ops.aten.max_pool2d_with_indices_backward(grad, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx)
    got = lowering._max_pool2d_with_indices_backward(grad, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx)
    torch.testing.assert_close(got, expected)


def test_conv1d_training_graphs_lower_and_keep_eager_gradients() -> None:
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv1d(3, 4, 3, padding=1, stride=2, dilation=1), nn.ReLU())
    x = torch.randn(2, 3, 9, requires_grad=True)
    assert lower_training(module, x.detach()) == {"forward": [], "backward": []}
    module.zero_grad()
    module(x).pow(2).sum().backward()
    eager = [module[0].weight.grad.clone(), module[0].bias.grad.clone(), x.grad.clone()]
    module.zero_grad()
    x.grad = None
    torch._dynamo.reset()
    run_graph = lambda gm, _inputs: make_boxed_func(gm.forward)  # noqa: E731 - run the decomposed graphs
    backend = aot_autograd(fw_compiler=run_graph, bw_compiler=run_graph, decompositions=lowering.decomposition_table())
    torch.compile(module, backend=backend)(x).pow(2).sum().backward()
    for got, expected in zip([module[0].weight.grad, module[0].bias.grad, x.grad], eager):
        torch.testing.assert_close(got, expected)


def test_non_overlapping_avg_pool_training_graphs_lower() -> None:
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AvgPool2d(2))
    assert lower_training(module, torch.randn(2, 3, 9, 9)) == {"forward": [], "backward": []}


@pytest.mark.parametrize(("kernel", "stride", "size"), [(2, [], 8), (2, [], 7), (3, [3, 3], 9)])
def test_avg_pool_backward_decomposition_matches_aten(kernel: int, stride: list[int], size: int) -> None:
    x = torch.randn(2, 3, size, size)
    grad = torch.randn_like(F.avg_pool2d(x, kernel, stride or None))
    args = (grad, x, [kernel, kernel], stride, [0, 0], False, True, None)
    torch.testing.assert_close(lowering._avg_pool2d_backward(*args), torch.ops.aten.avg_pool2d_backward(*args))


class NormalSample(nn.Module):
    """A Gaussian policy's sample (torch.distributions' ``Normal.sample``: ``aten.normal``)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        loc, scale = self.fc(x).chunk(2, -1)
        action = torch.distributions.Normal(loc, F.softplus(scale) + 1e-3).sample()
        return loc * action.tanh()


def test_normal_sampling_lowers_only_with_porters_decomposition() -> None:
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    assert "aten.normal" in lower_training(NormalSample(), torch.randn(2, 4), table=dict(get_decomposition_table()))["forward"]
    assert lower_training(NormalSample(), torch.randn(2, 4)) == {"forward": [], "backward": []}


@pytest.mark.parametrize("form", ["tensor-tensor", "tensor-float", "float-tensor", "distribution"])
def test_normal_decomposition_draws_the_eager_numbers(form: str) -> None:
    """The compiled graph runs the decomposition: under one seed it must give eager's samples exactly."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    draws: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
        "tensor-tensor": lambda m, s: torch.normal(m, s),
        "tensor-float": lambda m, s: torch.normal(m, 0.3),
        "float-tensor": lambda m, s: torch.normal(0.2, s),
        "distribution": lambda m, s: torch.distributions.Normal(m, s).sample((3,)),
    }
    draw = draws[form]
    mean, std = torch.randn(5, 37), torch.rand(5, 37) + 0.1
    torch.manual_seed(1)
    eager = draw(mean, std)
    torch._dynamo.reset()
    run_graph = lambda gm, _inputs: make_boxed_func(gm.forward)  # noqa: E731 - run the decomposed graphs
    backend = aot_autograd(fw_compiler=run_graph, decompositions=lowering.decomposition_table())
    torch.manual_seed(1)
    compiled = torch.compile(draw, backend=backend)(mean, std)
    assert compiled.dtype == eager.dtype and compiled.shape == eager.shape
    assert torch.equal(compiled, eager)
