"""The semantic pass turns dropout off everywhere a script can draw it, RNN layers included."""

from __future__ import annotations

import subprocess
import sys

# A 2-layer LSTM/GRU/RNN in training mode with dropout=0.5 between layers: two forwards agree only
# when the inter-layer dropout is off. Run in a child: disable_dropout patches torch for the process.
PROBE = """
import sys, torch
from porter.check.harness import patches
if sys.argv[1] == "patched":
    patches.disable_dropout()
torch.manual_seed(0)
x = torch.randn(3, 5, 4)
for cls in (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN):
    rnn = cls(4, 8, num_layers=2, dropout=0.5).train()
    a, b = rnn(x)[0], rnn(x)[0]
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, [3, 3, 2, 1, 1])
    c, d = rnn(packed)[0].data, rnn(packed)[0].data
    print(cls.__name__, torch.equal(a, b) and torch.equal(c, d), rnn.__dict__.get("_porter_dropout"))
"""


def _run(mode: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")[:-1]


def test_rnn_dropout_is_off_in_the_semantic_pass() -> None:
    assert _run("patched") == ["LSTM True 0.5", "GRU True 0.5", "RNN True 0.5"]


def test_rnn_dropout_draws_masks_without_the_patch() -> None:
    # the probe can fail: unpatched, the same input gives two different outputs
    assert _run("plain") == ["LSTM False None", "GRU False None", "RNN False None"]
