"""Dynamo's own fma (``addcmul_`` with a tensor value: torch.optim.Adam's step compiled with the
model) lowers: split into a multiply and an add, the op's reference meaning."""

from __future__ import annotations

import pytest

from porter.check import lowering

torch = pytest.importorskip("torch")


def _fma_graph() -> torch.fx.GraphModule:
    from torch._inductor import inductor_prims
    from torch.fx.experimental.proxy_tensor import make_fx

    def fn(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return inductor_prims.fma(a, b, c) * 2

    return make_fx(fn)(torch.randn(3), torch.randn(3), torch.randn(3))


def test_fma_is_split_and_lowers() -> None:
    gm = _fma_graph()
    assert any("fma" in str(n.target) for n in gm.graph.nodes)
    assert not lowering.lower(gm).ok  # upstream torch-mlir has no lowering for prims.fma
    ready = lowering.prepare(gm)
    assert not any("fma" in str(n.target) for n in ready.graph.nodes)
    a, b, c = torch.randn(3), torch.randn(3), torch.randn(3)
    assert torch.allclose(ready(a, b, c), (a * b + c) * 2)
    result = lowering.lower(ready)
    assert result.ok and "stablehlo.multiply" in result.text and "stablehlo.add" in result.text, result.error


def test_foreach_ops_decompose_per_tensor_and_lower() -> None:
    """tensordict's lerp_/sub/addcmul over a parameter list (SoftUpdate in a compiled update) and
    torch.optim's foreach paths: each foreach op is its op once per tensor, which lowers."""
    from functorch.compile import aot_function, make_boxed_func

    graphs: list[torch.fx.GraphModule] = []

    def keep(gm: torch.fx.GraphModule, example: object) -> object:
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    def fn(xs: list[torch.Tensor], ys: list[torch.Tensor]) -> list[torch.Tensor]:
        moved = torch._foreach_sub(xs, ys, alpha=0.5)
        mixed = torch._foreach_addcmul(moved, xs, ys, value=0.25)
        return [*torch._foreach_lerp(mixed, ys, 0.1), *torch._foreach_norm(xs)]

    xs, ys = [torch.randn(3), torch.randn(2, 2)], [torch.randn(3), torch.randn(2, 2)]
    compiled = aot_function(fn, fw_compiler=keep, decompositions=lowering.decomposition_table())
    got = compiled(xs, ys)
    for a, b in zip(got, fn(xs, ys)):
        assert torch.allclose(a, b)
    (gm,) = graphs
    assert not any("_foreach" in str(n.target) for n in gm.graph.nodes), gm.graph
    result = lowering.lower(lowering.prepare(gm))
    assert result.ok, result.error
