"""Cross-rule behaviour of the mixed-precision rules that single-rule fixtures cannot show."""

from __future__ import annotations

from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.results import Success

HALF_SCRIPT = b"""import torch

model = torch.nn.Linear(4, 4).half()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    loss = model(torch.ones(2, 4)).sum()
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
"""


def _port(source: bytes, **options: object) -> Success:
    result = port_source(source, "train.py", Options(**options))  # type: ignore[arg-type]
    assert isinstance(result, Success), result
    return result


def _codes(result: Success) -> list[str]:
    return [change.code for change in result.changes]


def test_scaler_removed_when_every_float16_source_is_ported() -> None:
    result = _port(HALF_SCRIPT, select=("NRN2",))
    text = result.new.decode()
    assert "GradScaler" not in text and "scaler" not in text
    assert ".bfloat16()" in text and "loss.backward()" in text and "optimizer.step()" in text


def test_scaler_kept_and_marked_when_the_fp16_rule_is_deselected() -> None:
    result = _port(HALF_SCRIPT, select=("NRN2",), ignore=("NRN203",))
    text = result.new.decode()
    assert '.half()' in text
    assert 'scaler = torch.amp.GradScaler("neuron")' in text
    assert "# porter: NRN206 GradScaler kept: float16 remains (.half(), line 3)" in text
    assert "scaler.scale(loss).backward()" in text


def test_scaler_kept_when_autocast_is_deselected() -> None:
    result = _port(HALF_SCRIPT, select=("NRN2",), ignore=("NRN201",))
    assert "NRN206" in _codes(result)
    assert "NRN204" not in _codes(result)


def test_kept_scaler_follows_accelerator_style() -> None:
    source = HALF_SCRIPT.replace(b".half()", b"").replace(b"autocast()", b"autocast(dtype=args.dtype)")
    result = _port(source, select=("NRN2",), style="accelerator")
    # current_accelerator() is None on a CPU-only host: "cuda" there (the scaler disables itself, as before)
    assert b'GradScaler(getattr(torch.accelerator.current_accelerator(), "type", "cuda"))' in result.new


def test_wrapper_module_edits_are_review_items() -> None:
    source = b"""import torch


class Wrapper:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer):
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()
"""
    result = _port(source, select=("NRN2",))
    assert {change.safety.value for change in result.changes} == {"review"}
    assert b"loss.backward()" in result.new and b"GradScaler" not in result.new


def test_cuda_half_tensors_block_scaler_removal_without_nrn107() -> None:
    source = b"""import torch
x = torch.cuda.HalfTensor(2, 3)
scaler = torch.cuda.amp.GradScaler()
scaler.scale(x.sum()).backward()
"""
    assert "NRN204" in _codes(_port(source))
    kept = _port(source, ignore=("NRN107",))
    assert "NRN206" in _codes(kept) and "NRN204" not in _codes(kept)
