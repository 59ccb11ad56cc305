"""The lowering step's copy of a graph shares the graph's tensors: the backend runs under
AOTAutograd's fake mode, where a deep copy of a real tensor (a constant lifted into the graph, a
parameter, views sharing one storage) goes through the fake kernels and failed (torchrl's CQL loss:
"set the storage of a tensor on device meta to a storage on different device cpu")."""

from __future__ import annotations

import pytest

from porter.check import lowering

torch = pytest.importorskip("torch")


class _Offsets(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        base = torch.arange(8.0).reshape(2, 4)
        self.low, self.high = base[0], base[1]  # two views of one storage, plain attributes
        self.scale = torch.nn.Parameter(torch.full((4,), 2.0))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return (x - self.low) * self.scale + self.high, None


def test_prepare_under_fake_mode_shares_the_graphs_tensors() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    gm = torch.fx.symbolic_trace(_Offsets())
    with FakeTensorMode():
        ready = lowering.prepare(gm)  # before: RuntimeError from the fake kernel of set_
    assert ready is not gm and ready.graph is not gm.graph
    assert ready.low is gm.low and ready.high is gm.high and ready.scale is gm.scale
    assert ready.low.untyped_storage().data_ptr() == ready.high.untyped_storage().data_ptr()
    x = torch.randn(4)
    (out,) = ready(x)  # the None output stripped, the copy still computes what the graph does
    assert torch.equal(out, gm(x)[0])
    assert len(list(gm.graph.output_node().args[0])) == 2  # the original graph is untouched
