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
