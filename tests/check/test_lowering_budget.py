"""The lowering step is bounded: slice ends of INT64_MAX are clamped (the backward of
``x[:, n:, :]``), and a lowering that outgrows its memory or time budget is reported, not fatal."""

from __future__ import annotations

import copy
import sys
import time

import pytest
from functorch.compile import aot_function, make_boxed_func

from porter.check import lowering

torch = pytest.importorskip("torch")

INT64_MAX = 9223372036854775807


def _backward_of_suffix_slice() -> torch.fx.GraphModule:
    graphs: dict[str, torch.fx.GraphModule] = {}

    def keep(kind: str):  # type: ignore[no-untyped-def]
        def compiler(gm: torch.fx.GraphModule, example: object) -> object:
            graphs[kind] = gm
            return make_boxed_func(gm.forward)

        return compiler

    def fn(x: torch.Tensor) -> torch.Tensor:
        return (x[:, 2:, :] * 3).sum()

    x = torch.randn(2, 5, 4, requires_grad=True)
    compiled = aot_function(fn, fw_compiler=keep("fw"), bw_compiler=keep("bw"), decompositions=lowering.decomposition_table())
    compiled(x).backward()
    return graphs["bw"]


def _scatter_ends(gm: torch.fx.GraphModule) -> list[object]:
    return [n.args[4] for n in gm.graph.nodes if n.target is torch.ops.aten.slice_scatter.default]


def test_suffix_slice_backward_is_clamped_and_lowers_within_budget() -> None:
    bw = _backward_of_suffix_slice()
    assert _scatter_ends(bw) == [INT64_MAX]  # what AOTAutograd records for x[:, 2:, :]
    ready = lowering.prepare(bw)
    assert _scatter_ends(ready) == [5] and _scatter_ends(bw) == [INT64_MAX]  # the run keeps its graph
    started = time.perf_counter()
    result = lowering.lower_bounded(ready, memory_mb=2048, timeout_s=60)
    assert result.ok and "stablehlo" in result.text, result.error
    assert result.exceeded is None and time.perf_counter() - started < 30
    # the clamped op computes what the recorded one does
    x, src = torch.zeros(2, 5, 4), torch.randn(2, 3, 4)
    assert torch.equal(
        torch.ops.aten.slice_scatter.default(x, src, 1, 2, INT64_MAX), torch.ops.aten.slice_scatter.default(x, src, 1, 2, 5)
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the budget needs fork and /proc")
def test_unclamped_lowering_exceeds_its_memory_budget_and_is_reported() -> None:
    bw = _backward_of_suffix_slice()
    unclamped = lowering.strip_none_outputs(bw)
    unclamped = copy.deepcopy(unclamped) if unclamped is bw else unclamped
    assert _scatter_ends(unclamped) == [INT64_MAX]
    result = lowering.lower_bounded(unclamped, memory_mb=768, timeout_s=90)
    assert not result.ok and result.exceeded == "memory", result
    assert "budget" in result.error
    failing = lowering.failing_nodes(unclamped, exceeded_only=True)
    assert [lowering.op_name(node.target) for node, _ in failing] == ["aten.slice_scatter"]


def test_lowering_that_runs_out_of_time_is_reported() -> None:
    bw = _backward_of_suffix_slice()
    unclamped = copy.deepcopy(bw)
    result = lowering.lower_bounded(unclamped, memory_mb=16384, timeout_s=2)
    assert not result.ok and result.exceeded == "time" and "time budget" in result.error
