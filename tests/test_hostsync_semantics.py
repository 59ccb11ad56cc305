"""The host-sync rewrites keep the numbers: the original and its port run on the CPU with the
same seed and data, and what the port logs is what the original logged (or its mean over the
interval, for a running value reset every step)."""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable

import pytest

from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.results import Success

torch = pytest.importorskip("torch")

STEPS = 25  # LOG_INTERVAL is 10: the port logs at steps 0, 10 and 20


def _port(source: str) -> str:
    result = port_source(source.encode(), "script.py", Options(all_files=True))
    assert isinstance(result, Success), result
    return result.new_text


def _run(source: str, name: str, *args: object) -> tuple[object, str]:
    namespace: dict[str, object] = {}
    exec(compile(source, "script.py", "exec"), namespace)
    function = namespace[name]
    assert callable(function)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(STEPS)]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = function(model, data, optimizer, *args)
    return value, out.getvalue()


RUNNING_MEAN = '''
import torch


def train(model, data, optimizer, log_metrics, save):
    train_loss = 0.0
    for step, (x, y) in enumerate(data):
        x, y = x.to("cpu"), y.to("cpu")
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        train_loss += loss.item()
        log_metrics({"train_loss": train_loss}, step)
        train_loss = 0.0
        if step % 5 == 0:
            save(step)
'''


def _logger(into: list[tuple[int, float]]) -> Callable[[dict[str, float], int], None]:
    return lambda values, step: into.append((step, float(values["train_loss"])))


def test_running_value_is_logged_as_its_mean_over_the_interval() -> None:
    port = _port(RUNNING_MEAN)
    assert "train_loss_steps" in port and "LOG_INTERVAL" in port
    original: list[tuple[int, float]] = []
    ported: list[tuple[int, float]] = []
    saved: list[int] = []
    _run(RUNNING_MEAN, "train", _logger(original), lambda step: None)
    _run(port, "train", _logger(ported), saved.append)
    per_step = dict(original)
    assert [step for step, _ in ported] == [0, 10, 20]
    previous = -1
    for step, value in ported:
        window = [per_step[s] for s in range(previous + 1, step + 1)]
        assert math.isclose(value, sum(window) / len(window), rel_tol=1e-5), (step, value, window)
        previous = step
    assert saved == list(range(0, STEPS, 5))  # the checkpoint cadence is untouched


FEEDERS = '''
import torch


def train(model, data, optimizer):
    for i, (x, y) in enumerate(data):
        x, y = x.to("cpu"), y.to("cpu")
        optimizer.zero_grad()
        out = model(x)
        loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        d_x = out.mean().item()
        optimizer.step()
        print(f"{i} loss {loss.item():.6f} d_x {d_x:.6f}")
'''


def test_a_value_kept_on_the_device_prints_the_same_text() -> None:
    port = _port(FEEDERS)
    assert "out.mean().detach()" in port and "d_x.item()" in port
    _, original = _run(FEEDERS, "train")
    _, ported = _run(port, "train")
    lines = original.splitlines()
    assert ported.splitlines() == [lines[0], lines[10], lines[20]]


FLOAT_SUM = '''
import torch


def train(model, data, optimizer):
    total = 0
    correct = 0
    for x, y in data:
        x, y = x.to("cpu"), y.to("cpu")
        optimizer.zero_grad()
        out = model(x)
        loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        optimizer.step()
        total += loss.item()
        correct += (out > 0).sum().item()
    return total / len(data), correct
'''


def test_a_float_sum_into_an_integer_literal_is_not_truncated() -> None:
    port = _port(FLOAT_SUM)
    assert "float(total)" in port and "int(correct)" in port
    (mean, correct), _ = _run(FLOAT_SUM, "train")  # type: ignore[misc]
    (ported_mean, ported_correct), _ = _run(port, "train")  # type: ignore[misc]
    assert 0 < mean < 10 and math.isclose(ported_mean, mean, rel_tol=1e-5)
    assert ported_correct == correct and isinstance(ported_correct, int)


REFRESHED = '''
import torch


def train(model, data, optimizer, evaluate, log_metrics):
    for i, (x, y) in enumerate(data):
        x, y = x.to("cpu"), y.to("cpu")
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        metrics = {"loss": loss.detach()}
        with torch.no_grad():
            if i % 4 == 0:
                eval_out = evaluate(model)
            metrics["eval"] = eval_out.mean().item() * 2.0
        log_metrics(metrics, i)
'''


def test_a_read_moved_into_its_refreshing_branch_logs_the_same_value_every_step() -> None:
    """NRN611: the evaluation's value is read once per interval, and every step logs what it did."""
    port = _port(REFRESHED)
    assert 'metrics["eval"] = eval_value' in port, port  # the key names it; `eval` is a builtin
    evaluate = lambda model: model(torch.ones(3, 4))  # noqa: E731
    original: list[tuple[int, float]] = []
    ported: list[tuple[int, float]] = []
    _run(REFRESHED, "train", evaluate, lambda values, step: original.append((step, values["eval"])))
    _run(port, "train", evaluate, lambda values, step: ported.append((step, values["eval"])))
    assert ported == original and len(original) == STEPS
    assert len({value for _, value in original}) == len(range(0, STEPS, 4))  # refreshed every 4 steps


UNLOGGED = '''
import torch


def send(sink, values, step):
    if sink is not None:
        sink.log_metrics(values, step)


def train(model, data, optimizer, sink):
    for step, (x, y) in enumerate(data):
        x, y = x.to("cpu"), y.to("cpu")
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        metrics = {"loss": loss.detach().cpu(), "bias": model.bias.sum().item()}
        metrics["step"] = step
        send(sink, metrics, step)
'''


class _Sink:
    def __init__(self) -> None:
        self.logged: list[tuple[int, dict[str, float]]] = []

    def log_metrics(self, values: dict[str, object], step: int) -> None:
        self.logged.append((step, {key: float(value) for key, value in values.items()}))  # type: ignore[arg-type]


def test_metrics_read_only_for_a_logger_are_logged_the_same_and_not_read_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """NRN612: with a logger, the same values every step; without one, no device value is read."""
    port = _port(UNLOGGED)
    assert "} if sink is not None else {}" in port, port
    original, ported = _Sink(), _Sink()
    _run(UNLOGGED, "train", original)
    _run(port, "train", ported)
    assert ported.logged == original.logged and len(original.logged) == STEPS
    reads = {"n": 0}
    item, cpu = torch.Tensor.item, torch.Tensor.cpu

    def counted(real: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            reads["n"] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(torch.Tensor, "item", counted(item))
    monkeypatch.setattr(torch.Tensor, "cpu", counted(cpu))
    _run(UNLOGGED, "train", None)
    assert reads["n"] == 2 * STEPS  # the original reads both values every step
    reads["n"] = 0
    _run(port, "train", None)
    assert reads["n"] == 0


SAVED_AFTER_THE_LOOP = '''
import torch


def save(path, metrics, saved):
    """Checkpoint the last metrics; no path, no checkpoint."""
    if path in (None, ""):
        return None
    saved.append((path, dict(metrics)))
    return path


def train(model, data, optimizer, sink, path, saved):
    metrics = {}
    for step, (x, y) in enumerate(data):
        x, y = x.to("cpu"), y.to("cpu")
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        metrics = {}
        metrics.update({"loss": loss.detach().item(), "step": step})
        if sink:
            sink.log_metrics(metrics, step)
    save(path, metrics, saved)
'''


def test_metrics_saved_after_the_loop_are_the_last_step_s_and_not_read_without_a_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """NRN612 with a consumer after the loop (a save that returns when its path is None): the same
    saved metrics and logs with a path or a logger; no device read with neither."""
    port = _port(SAVED_AFTER_THE_LOOP)
    assert "if sink is not None or path is not None:" in port, port
    for sink_class, path in ((_Sink, None), (None, "ckpt.pt"), (_Sink, "ckpt.pt")):
        before: list[object] = []
        after: list[object] = []
        original_sink, ported_sink = (sink_class(), sink_class()) if sink_class else (None, None)
        _run(SAVED_AFTER_THE_LOOP, "train", original_sink, path, before)
        _run(port, "train", ported_sink, path, after)
        assert after == before
        if original_sink is not None and ported_sink is not None:
            assert ported_sink.logged == original_sink.logged and len(original_sink.logged) == STEPS
    assert len(before) == 1 and before[0] == ("ckpt.pt", before[0][1]) and before[0][1]["step"] == STEPS - 1  # type: ignore[index]
    reads = {"n": 0}
    item = torch.Tensor.item

    def counted(*args: object, **kwargs: object) -> object:
        reads["n"] += 1
        return item(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch.Tensor, "item", counted)
    _run(SAVED_AFTER_THE_LOOP, "train", None, None, [])
    assert reads["n"] == STEPS
    reads["n"] = 0
    _run(port, "train", None, None, [])
    assert reads["n"] == 0
