"""The emulated ``torch.neuron`` rejects what the real one rejects, with the same exception types.

Each probe runs in a subprocess set up as ``porter check`` sets up a port (``neuron`` renamed from
PrivateUse1, the emulated module registered), because both steps are process-global and permanent.
One subprocess answers every probe; the tests read its answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

pytest.importorskip("torch")

_SETUP = """
import json, torch
from porter.check.harness import neuron_module
torch.utils.rename_privateuse1_backend("neuron")
torch._register_device_module("neuron", neuron_module.build())
results = {}
def probe(name, fn):
    try:
        value = fn()
        results[name] = ["ok", repr(value)]
    except Exception as error:
        results[name] = [type(error).__name__, str(error)]
"""

_SINGLE = """
n = torch.neuron
probe("stream positional", lambda: n.Stream(torch.device("neuron", 0)))
probe("stream keyword", lambda: n.Stream(device=torch.device("neuron", 0)))
probe("stream keyword str", lambda: n.Stream(device="neuron:0", priority=-1))
probe("stream cuda device", lambda: n.Stream(device="cuda:0"))
probe("event interprocess", lambda: n.Event(enable_timing=True, interprocess=True))
probe("event third positional", lambda: n.Event(True, False, False))
probe("event", lambda: n.Event(True, False).query())
probe("bf16 including_emulation", lambda: n.is_bf16_supported(including_emulation=False))
probe("bf16", lambda: n.is_bf16_supported())
probe("name str", lambda: n.get_device_name("neuron:0"))
probe("name None", lambda: n.get_device_name(None))
probe("name int", lambda: n.get_device_name(0))
probe("name device", lambda: n.get_device_name(torch.device("neuron", 0)))
probe("set_device str", lambda: n.set_device("neuron:0"))
probe("set_device device", lambda: n.set_device(torch.device("neuron:0")))
probe("set_device int", lambda: n.set_device(0))
probe("set_device out of range", lambda: n.set_device(3))
probe("props major", lambda: n.get_device_properties(0).major)
probe("props multi_processor_count", lambda: n.get_device_properties(0).multi_processor_count)
probe("props total_memory", lambda: n.get_device_properties(0).total_memory)
probe("props cuda string", lambda: n.get_device_properties("cuda:0"))
probe("props neuron string", lambda: n.get_device_properties("neuron:0").name)
probe("init", lambda: n.init())
probe("is_initialized", lambda: n.is_initialized())
probe("mem_get_info", lambda: n.mem_get_info())
probe("get_rng_state_all", lambda: n.get_rng_state_all())
probe("set_rng_state new_state", lambda: n.set_rng_state(new_state=n.get_rng_state()))
probe("set_rng_state state", lambda: n.set_rng_state(state=n.get_rng_state()))
probe("device device=", lambda: n.device(device=0))
probe("device cuda", lambda: n.device("cuda:0"))
probe("synchronize cuda", lambda: n.synchronize("cuda"))
probe("memory_stats keys", lambda: sorted(n.memory_stats()))
probe("memory submodule", lambda: n.memory.memory_allocated())
print(json.dumps(results))
"""

# torchrun-like environment of local rank 1 of 2, before and after init_process_group.
_DISTRIBUTED = """
import torch.distributed as dist
probe("before init: other local index", lambda: torch.neuron.set_device(0))
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
probe("after init: other local index", lambda: torch.neuron.set_device(0))
probe("after init: local rank", lambda: torch.neuron.set_device(1))
probe("after init: current device", lambda: torch.neuron.current_device())
dist.destroy_process_group()
print(json.dumps(results))
"""


def _run(body: str, env: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Run the probes in ``body`` in a fresh process; a single-process job unless ``env`` says otherwise."""
    base = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SETUP + body)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return answers


@pytest.fixture(scope="module")
def single() -> dict[str, list[str]]:
    return _run(_SINGLE)


def _kind(answers: dict[str, Any], name: str) -> str:
    return str(answers[name][0])


@pytest.mark.parametrize(
    ("probe", "expected"),
    [
        # torch.neuron.Stream is `def Stream(**kwargs)` (torch_neuronx/neuron.py)
        ("stream positional", "TypeError"),
        ("stream keyword", "ok"),
        ("stream keyword str", "ok"),
        ("stream cuda device", "ValueError"),  # _get_device_index: "Expected neuron device"
        # torch.neuron.Event(enable_timing=False, blocking=False)
        ("event interprocess", "TypeError"),
        ("event third positional", "TypeError"),
        ("event", "ok"),
        # is_bf16_supported() takes no arguments
        ("bf16 including_emulation", "TypeError"),
        ("bf16", "ok"),
        # get_device_name: int or torch.device, else ValueError
        ("name str", "ValueError"),
        ("name None", "ValueError"),
        ("name int", "ok"),
        ("name device", "ok"),
        # set_device: getattr(device, "index", device) then an int comparison
        ("set_device str", "TypeError"),
        ("set_device device", "ok"),
        ("set_device int", "ok"),
        ("set_device out of range", "ValueError"),
        # properties: name and total_memory only
        ("props major", "AttributeError"),
        ("props multi_processor_count", "AttributeError"),
        ("props total_memory", "ok"),
        ("props cuda string", "ValueError"),
        ("props neuron string", "ok"),
        # init/is_initialized exist; CUDA-only names do not
        ("init", "ok"),
        ("is_initialized", "ok"),
        ("mem_get_info", "AttributeError"),
        ("get_rng_state_all", "AttributeError"),
        ("set_rng_state new_state", "TypeError"),
        ("set_rng_state state", "ok"),
        ("device device=", "TypeError"),
        ("device cuda", "ValueError"),
        ("synchronize cuda", "ValueError"),
        ("memory submodule", "ok"),
    ],
)
def test_emulated_module_rejects_what_torch_neuronx_rejects(single: dict[str, Any], probe: str, expected: str) -> None:
    assert _kind(single, probe) == expected, single[probe]


def test_values_follow_the_real_module(single: dict[str, Any]) -> None:
    assert single["name int"][1] == "'neuron:0'"
    assert single["is_initialized"][1] == "True"  # init() ran just before
    keys = json.loads(single["memory_stats keys"][1].replace("'", '"'))
    assert {"allocated_bytes", "reserved_bytes", "active_bytes", "num_ooms"} <= set(keys)
    assert not any("." in key for key in keys)  # no CUDA-style flat keys


def test_distributed_job_accepts_only_the_local_rank() -> None:
    answers = _run(_DISTRIBUTED, {"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "RANK": "1", "WORLD_SIZE": "2"})
    assert _kind(answers, "before init: other local index") == "ok"
    assert answers["after init: other local index"][0] == "ValueError"
    assert "Valid range is 1 to 1 for this process" in answers["after init: other local index"][1]
    assert _kind(answers, "after init: local rank") == "ok"
    assert answers["after init: current device"][1] == "1"


# A CUDA script's runtime calls, each one the real torch.neuron rejects when only renamed.
_CUDA_SCRIPT = """\
import os

import torch

local_rank = int(os.environ.get("LOCAL_RANK", 0))
device = f"cuda:{local_rank}"
torch.cuda.set_device(device)
name = torch.cuda.get_device_name(device)
first = torch.cuda.get_device_name("cuda:0")
current = torch.cuda.get_device_name(None)
total = torch.cuda.get_device_properties(0).total_memory
dtype = torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float32
side = torch.cuda.Stream(device)
start = torch.cuda.Event(True, False, False)
end = torch.cuda.Event(enable_timing=True, interprocess=False)
state = torch.cuda.get_rng_state()
torch.cuda.set_rng_state(new_state=state)
with torch.cuda.device(device=local_rank):
    pass
torch.cuda.init()
assert torch.cuda.is_initialized()
torch.cuda.synchronize("cuda:0")
with torch.cuda.device("cuda:0"):
    memory = torch.cuda.get_device_properties("cuda:0").total_memory
"""

_EXEC = """
import os
for label in ("renamed", "ported"):
    code = open(os.environ["PORTER_PROBE_" + label.upper()]).read()
    probe(label, lambda code=code: exec(compile(code, label, "exec"), {"__name__": "__main__"}))
print(json.dumps(results))
"""


def test_porter_port_runs_where_a_plain_rename_crashes(tmp_path: Any) -> None:
    from porter.engine.core import port_source
    from porter.engine.results import Success

    result = port_source(_CUDA_SCRIPT.encode(), "script.py")
    assert isinstance(result, Success)
    ported = result.new.decode()
    assert "# porter:" not in ported  # every call was ported, none left for review
    (tmp_path / "ported.py").write_text(ported)
    (tmp_path / "renamed.py").write_text(_CUDA_SCRIPT.replace("cuda", "neuron"))
    answers = _run(
        _EXEC,
        {"PORTER_PROBE_RENAMED": str(tmp_path / "renamed.py"), "PORTER_PROBE_PORTED": str(tmp_path / "ported.py")},
    )
    assert answers["renamed"][0] in ("TypeError", "ValueError"), answers["renamed"]
    assert answers["ported"][0] == "ok", (answers["ported"], ported)
