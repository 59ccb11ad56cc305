"""NRN608 keeps a metric logger's numbers and cadence: the ported logger prints the same text at the
same calls as the original and returns the same averages, while ``update`` reads no device value
(``.item()`` runs only when a meter is read). Runs the golden fixture's input and output classes."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest
import torch

FOLDER = Path(__file__).parent / "fixtures" / "host-sync-logging"


def _classes(name: str) -> dict[str, Any]:
    return runpy.run_path(str(FOLDER / name))


def _drive(namespace: dict[str, Any], reads: list[int], monkeypatch: pytest.MonkeyPatch, ported: bool) -> tuple[list[str], float, float]:
    """Eight logged steps with tensors and floats, as the fixture's loops log them (a direct meter
    update gets ``t.item()`` in the original, the tensor in the port); prints every third step;
    counts the .item() calls of each step's updates."""
    item = torch.Tensor.item
    calls = [0]

    def counted(self: torch.Tensor) -> Any:
        calls[0] += 1
        return item(self)

    monkeypatch.setattr(torch.Tensor, "item", counted)
    logger = namespace["StatLogger"]()
    logger.add_stat("lr", namespace["WindowedStat"](window=1))
    printed = []
    generator = torch.Generator().manual_seed(0)
    for step in range(8):
        loss = torch.rand((), generator=generator) * 3
        acc = torch.rand((), generator=generator)
        before = calls[0]
        logger.update(loss=loss, acc=acc, lr=0.1 / (step + 1))
        direct = acc * 100
        logger.stats["acc"].update(direct if ported else direct.item(), weight=4)
        reads.append(calls[0] - before)
        loss.add_(1.0)  # changed after it was logged: the logged value is the one at update time
        if step % 3 == 0:
            printed.append(str(logger))
    return printed, logger.stats["loss"].mean, logger.stats["acc"].mean


@pytest.mark.parametrize("case", ["meter_logger", "alias_meter_logger"])
def test_ported_logger_prints_the_same_and_reads_only_when_printed(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    original_reads: list[int] = []
    ported_reads: list[int] = []
    original = _drive(_classes(f"{case}.in.py"), original_reads, monkeypatch, ported=False)
    ported = _drive(_classes(f"{case}.out.py"), ported_reads, monkeypatch, ported=True)
    assert ported == original  # same lines at the same steps, same averages, bit for bit
    assert set(original_reads) == {3}  # the original reads loss, acc and acc*100 in every update
    assert set(ported_reads) == {0}  # the port reads none in update: only where it prints

