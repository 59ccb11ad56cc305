"""Host-sync rewrites are a fixed point in both styles: random training-shaped loops with device
tests, interval branches and per-step syncs port once and then change no more."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from porter.engine.options import Options
from tests.test_properties import HEADER, _check

STATEMENTS = [
    "loss = model(x.cuda())",
    "loss.backward()",
    "optimizer.step()",
    "torch.cuda.synchronize()",
    "running += loss.item()",
    "running = 0.0",
    'print(f"loss {loss.item():.4f}")',
    "d_x = out.mean().item()",
    'print(f"d_x {d_x:.4f}")',
    'logs = {"loss": loss.detach().item()}',
    "pbar.set_postfix(**logs)",
    "losses.append(loss.item())",
]
HEADERS = [
    'if device == "cuda":',
    'if device.type == "cuda":',
    "if step % 10 == 0:",
    "if step % args.save_steps == 0:",
    "if step == 3:",
    "with torch.no_grad():",
]


def _body(depth: int) -> st.SearchStrategy[list[str]]:
    line = st.sampled_from(STATEMENTS).map(lambda s: [s])
    if depth == 0:
        return st.lists(line, min_size=1, max_size=5).map(lambda ls: [s for group in ls for s in group])
    nested = st.tuples(st.sampled_from(HEADERS), _body(depth - 1)).map(lambda hb: [hb[0], *("    " + s for s in hb[1])])
    return st.lists(st.one_of(line, nested), min_size=1, max_size=5).map(lambda ls: [s for group in ls for s in group])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_body(2), style=st.sampled_from(["neuron", "accelerator"]))
def test_host_sync_loops_are_a_fixed_point(body: list[str], style: str) -> None:
    lines = [
        "def train(model, loader, optimizer, device, args, pbar):",
        "    running = 0.0",
        "    losses = []",
        "    for step, (x, out) in enumerate(loader):",
        *("        " + s for s in body),
        "    return running, losses",
    ]
    _check(HEADER + "\n".join(lines) + "\n", Options(style=style, all_files=True))  # type: ignore[arg-type]
