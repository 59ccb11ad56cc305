"""Never lose the CPU fallback: a script whose module top level runs on CPU-only torch before the
port still runs there after it (issue 15 §2).

Every fixture (``.in.py`` against its expected ``.out.py``, or itself when it must stay unchanged)
and every sample (``samples/*.py`` against its port with all rules) is executed as a module that is
*imported*, not run (``__name__`` is not ``"__main__"``), in one child process that has no CUDA
and no torch-neuronx — the machine porter's own CI and a user's laptop look like. Originals that
fail there (fragments with undefined names, missing packages) say nothing and are skipped; an
original that runs and a port that raises is a lost fallback.

One process for all files keeps the test fast (torch is imported once); each file gets a fresh
namespace, an alarm (a top-level training loop is cut off and counted as "ran"), and torch's
default device/dtype are reset after it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.results import Success
from tests.fixture_harness import ported

pytest.importorskip("torch")  # every port is imported in a child process with torch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "samples"

# Runs in the child: exec each (name, original, ported) and report what each raised.
_CHILD = r'''
import json, signal, sys, os, warnings
warnings.filterwarnings("ignore")
import torch
assert not hasattr(torch, "neuron"), "this test needs a torch without torch-neuronx"

class _Timeout(BaseException):
    pass

def _alarm(signum, frame):
    raise _Timeout()

signal.signal(signal.SIGALRM, _alarm)

# Heavy imports once, before any alarm: an alarm inside an import leaves a half-initialised
# module behind that would fail every later file.
import importlib
for _name in ("torch._dynamo", "torch.distributed", "torch.utils.data", "torch.utils.cpp_extension", "setuptools",
              "sympy.printing", "torchvision",
              "transformers", "accelerate", "datasets", "peft", "trl"):
    try:
        importlib.import_module(_name)
    except Exception:
        pass
try:
    import transformers
    for _name in ("Trainer", "TrainingArguments", "AutoModelForCausalLM", "AutoTokenizer", "is_kubeflow_available"):
        getattr(transformers, _name, None)
except Exception:
    pass

def run(text, name):
    loaded = set(sys.modules)
    saved = list(sys.argv)
    sys.argv = [name]
    try:
        code = compile(text, name, "exec")
        signal.setitimer(signal.ITIMER_REAL, 4.0)  # generous: heavy first imports on a loaded machine
        exec(code, {"__name__": "porter_fallback_import", "__file__": name})
        return None
    except _Timeout:
        # A top-level loop that runs for seconds did start: it imports. Modules the alarm may
        # have cut off half-way are forgotten, so the next file imports them afresh.
        for module in set(sys.modules) - loaded:
            del sys.modules[module]
        return None
    except SystemExit as error:
        return None if error.code in (0, None) else f"SystemExit: {error.code}"
    except BaseException as error:
        return f"{type(error).__name__}: {error}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.argv = saved
        if "accelerate" in sys.modules:  # an Accelerator() is a process-wide singleton
            try:
                from accelerate.state import AcceleratorState
                AcceleratorState._reset_state(True)
            except Exception:
                pass
        try:
            torch.set_default_device(None)
            torch.set_default_dtype(torch.float32)
        except Exception:
            pass

pairs = json.load(sys.stdin)
results = []
for name, original, ported in pairs:
    before = run(original, name)
    after = None if before is not None or ported == original else run(ported, name)
    results.append([name, before, after])
json.dump(results, sys.stdout)
'''


def _fixture_pairs() -> list[tuple[str, str, str]]:
    pairs = []
    for source in sorted(FIXTURES.glob("*/*.in.py")):
        expected = source.with_name(source.name[: -len(".in.py")] + ".out.py")
        original = source.read_text()
        ported = expected.read_text() if expected.exists() else original
        pairs.append((f"{source.parent.name}/{source.name}", original, ported))
    return pairs


def _sample_pairs() -> list[tuple[str, str, str]]:
    pairs = []
    for source in sorted([*SAMPLES.glob("*.py"), *SAMPLES.glob("*/*.py")]):
        original = source.read_text()
        result = ported(original.encode(), str(source), Options())
        port = result.new_text if isinstance(result, Success) else original
        pairs.append((f"samples/{source.relative_to(SAMPLES)}", original, port))
    return pairs


def _run(pairs: list[tuple[str, str, str]]) -> list[tuple[str, str | None, str | None]]:
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
        "HF_HUB_OFFLINE": "1",  # no network: a from_pretrained call fails fast
        "TRANSFORMERS_OFFLINE": "1",
    }
    with tempfile.TemporaryDirectory() as scratch:  # files a script writes at import land here
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=json.dumps(pairs),
            capture_output=True,
            text=True,
            # A scratch HOME too: fixtures that write config files at import (Accelerate's
            # write_basic_config) must not change what later runs, or the user's machine, see.
            env={**env, "HOME": scratch, "HF_HOME": os.path.join(scratch, "hf"),
                 "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])},
            cwd=scratch,
            timeout=600,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return [tuple(row) for row in json.loads(done.stdout.strip().splitlines()[-1])]  # type: ignore[misc]


# Known losses, each with the error it must still show (a fixed case must leave this list, so
# the entry cannot hide a new loss): an *explicit* "cuda" that became an explicit "neuron" in
# code evaluated at import time, which only a call-time form can fix.
KNOWN: dict[str, str] = {}


@pytest.mark.corpus  # a sweep over every fixture and sample: out of the fast loop, still in CI
def test_ported_scripts_keep_their_cpu_fallback() -> None:
    pairs = _fixture_pairs() + _sample_pairs()
    results = _run(pairs)
    ran = [name for name, before, _ in results if before is None]
    lost = {name: after for name, before, after in results if before is None and after is not None}
    # The measure means something only if a fair share of the originals do import on CPU.
    assert len(ran) >= 60, f"only {len(ran)} of {len(results)} originals import on CPU"
    new = [f"{name}: {error}" for name, error in lost.items() if KNOWN.get(name, "\0") not in error]
    assert not new, "ports that no longer import on CPU-only torch:\n" + "\n".join(new)
    stale = sorted(set(KNOWN) - set(lost))
    assert not stale, f"fixed (remove from KNOWN): {stale}"


def test_fork_rng_default_device_needs_no_port() -> None:
    """``torch.random.fork_rng(devices=...)`` without ``device_type`` is left as it is (fixture
    ``_corpus/fork_rng_default_device``): in torch 2.13 (the torch TorchNeuron's 2.13.3 wheels pair
    with) the default is ``None``, resolved to ``torch.accelerator.current_accelerator().type`` —
    "neuron" on Trainium — and "cuda" only where no accelerator exists. Writing
    ``device_type="neuron"`` would break a CPU-only run instead (no ``torch.neuron`` module there).
    This pins the torch fact the decision rests on."""
    import inspect

    import torch

    assert inspect.signature(torch.random.fork_rng).parameters["device_type"].default is None
    source = inspect.getsource(torch.random.fork_rng)
    assert "torch.accelerator.current_accelerator()" in source
    with torch.random.fork_rng(devices=[], enabled=True):  # the CPU run of the original: fine
        torch.rand(1)


_STEP_WITH_AUTOCAST = '''\
import torch

def step(model, x, use_amp=True):
    with torch.cuda.amp.autocast(enabled=use_amp):
        a = model(x).sum()
    with torch.autocast("cuda", dtype=torch.float16):
        b = model(x).sum()
    if torch.cuda.is_available():
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            b = b + model(x).sum()
    return a + b
'''


def test_accelerator_autocast_in_a_step_runs_on_a_cpu_host() -> None:
    """The sweep above only imports files; an autocast runs in the step. The original's CUDA
    autocast only disables itself (a warning) on a CPU-only host, so ``--style accelerator``'s
    device type must not be ``current_accelerator().type`` (None there): the step still runs."""
    import warnings

    import torch

    if torch.accelerator.current_accelerator() is not None:
        pytest.skip("needs a host with no accelerator")
    result = port_source(_STEP_WITH_AUTOCAST.encode(), "step.py", Options(style="accelerator"))
    assert isinstance(result, Success)
    code = [line for line in result.new.decode().splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "current_accelerator().type" in line]  # the short form raises here
    model = torch.nn.Linear(2, 1)
    x = torch.ones(3, 2)
    losses = []
    for source in (_STEP_WITH_AUTOCAST, result.new.decode()):
        namespace: dict[str, object] = {}
        exec(compile(source, "step.py", "exec"), namespace)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            losses.append(namespace["step"](model, x))  # type: ignore[operator]
    assert torch.equal(losses[0], losses[1])
