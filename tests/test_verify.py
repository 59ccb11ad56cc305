"""The post-port verifier (porter/engine/verify.py): what it reports on a port's output, what it
leaves alone (marked code, code a test keeps off on Neuron), the torch.neuron signature check, the
CPU-fallback check, and that the engine carries its findings on every parsed result."""

from __future__ import annotations

import pickle
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, QualifiedNameProvider

from porter.engine.core import port_source
from porter.engine.fastcst.names import LazyQualifiedNames
from porter.engine.fastcst.walk import TreeIndex
from porter.engine.options import Options
from porter.engine.results import Failure, Finding, FindingKind, Success, Unchanged
from porter.engine.verify import bind_problem, had_fallback, verify_port
from porter.rules._tables.neuron_api import REQUIRED, TABLE
from porter.rules.cuda_only_deps import CudaOnlyDeps
from tests.fixture_harness import ported

ROOT = Path(__file__).resolve().parent.parent


def _verify(source: str, fallback: bool = False) -> list[tuple[int, str, str | None]]:
    found = verify_port(cst.parse_module(source), "t.py", fallback)
    return [(f.line, f.kind.value, f.code) for f in found]


def _original_fallback(source: str) -> bool:
    module = cst.parse_module(source)
    tree = TreeIndex(module)
    names = LazyQualifiedNames(tree, lambda: MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider))
    return had_fallback(tree, names)


# --------------------------------------------------------------------------- CUDA-only left
def test_cuda_calls_left_without_a_marker_are_found() -> None:
    source = "import torch\nmodel = Net().cuda()\ntorch.cuda.synchronize()\nx = torch.zeros(2, device='cuda')\n"
    assert _verify(source) == [(2, "cuda-only", "NRN102"), (3, "cuda-only", "NRN103"), (4, "cuda-only", "NRN101")]


def test_a_marker_above_or_trailing_the_statement_covers_it() -> None:
    source = (
        "import torch\n# porter: NRN104 no Neuron equivalent\ntorch.cuda.synchronize()\n"
        "model = Net().cuda()  # porter: NRN102 left on purpose\n"
    )
    assert _verify(source) == []


def test_a_marker_excuses_only_the_findings_its_code_is_about() -> None:
    """An NRN206 note on a kept scaler says nothing of the "cuda" device beside it (the corpus case
    the old any-marker rule hid); an NRN104 note on a torch.cuda call covers that call only."""
    source = (
        "import torch\n"
        "# porter: NRN206 GradScaler kept: float16 remains\n"
        "scaler = torch.amp.GradScaler('cuda' if use_cuda else 'cpu', enabled=fp16)\n"  # 3: found
        "# porter: NRN104 no Neuron equivalent\n"
        "free = torch.cuda.mem_get_info()[0] if dev == 'cuda:0' else torch.zeros(1, device='cuda')\n"  # 5: the device
        "# porter: NRN104 no Neuron equivalent\n"
        "x = torch.cuda.mem_get_info(), torch.ones(1).cuda()\n"  # 7: the .cuda()
        "# porter: NRN102 kept\n"
        "y = torch.ones(1).cuda()\n"  # 9: its own code
        "# porter: NRN206 GradScaler assigned to scaler_type is torch.cuda.amp's here\n"
        "scaler_type = torch.cuda.amp.GradScaler\n"  # 11: the scaler the note is about
    )
    assert _verify(source) == [(3, "cuda-only", "NRN101"), (5, "cuda-only", "NRN101"), (7, "cuda-only", "NRN102")]


def test_the_marker_table_names_rule_codes_and_verifier_findings() -> None:
    from porter.engine.registry import catalogue
    from porter.engine.verify import MARKER_COVERS

    codes = catalogue()
    found = {"NRN101", "NRN102", "NRN103", "NRN109", "NRN114", "NRN301", "NRN303", *(f"NRN9{n:02d}" for n in range(1, 13))}
    for marker, covered in MARKER_COVERS.items():
        assert marker in codes, marker
        assert covered and covered <= found, (marker, covered - found)


def test_a_key_looked_up_and_an_import_a_version_test_skips_are_not_cuda() -> None:
    source = (
        "import torch\nfrom packaging import version\n"
        "if version.parse(torch.__version__).release >= (2, 3):\n    from torch.amp import GradScaler\n"
        "else:\n    from torch.cuda.amp import GradScaler\n"
        "scaler = GradScaler('neuron')\n"  # 7: torch.amp's on Neuron
        "if state.get('cuda'):\n    pass\n"  # 8: a key
        "dev = cfg.get('device', 'cuda')\n"  # 10: the default of a device key: found
    )
    assert _verify(source) == [(10, "cuda-only", "NRN101")]
    either = "import torch\ntry:\n    from torch.amp import GradScaler\nexcept ImportError:\n    from torch.cuda.amp import GradScaler\nscaler = GradScaler()\n"
    assert _verify(either) == [(6, "cuda-only", "NRN103")]  # both imports can run: unknown


def test_torch_accelerator_memory_calls_assert_on_neuron() -> None:
    source = (
        "import torch\nused = torch.accelerator.memory_allocated()\n"
        "free, total = torch.accelerator.get_memory_info()\n"
        "# porter: NRN104 kept\ntorch.accelerator.empty_cache()\n"
        "n = torch.get_device_module().memory_allocated() if torch.accelerator.is_available() else 0\n"
    )
    found = verify_port(cst.parse_module(source), "t.py", False)
    assert [(f.line, f.kind, f.code) for f in found] == [(2, FindingKind.NEURON_API, "NRN104"), (3, FindingKind.NEURON_API, "NRN104")]
    assert "get_device_module().memory_allocated" in found[0].message and "mem_get_info" in found[1].message


def test_aliases_resolve_by_qualified_name() -> None:
    source = "import torch as th\nfrom torch import cuda as c\nfrom torch.nn import DataParallel as DP\nth.cuda.synchronize()\nc.empty_cache()\nm = DP(m)\n"
    assert _verify(source) == [(4, "cuda-only", "NRN103"), (5, "cuda-only", "NRN103"), (6, "cuda-only", "NRN109")]


@pytest.mark.parametrize(
    "guarded",
    [
        "if torch.cuda.is_available():\n    torch.cuda.synchronize()\n",
        "if torch.cuda.device_count() > 1:\n    model = Net().cuda()\n",
        "if device.type == 'cuda':\n    torch.cuda.synchronize()\n",
        "if 'cuda' in str(device):\n    torch.cuda.synchronize()\n",
        "if x.is_cuda:\n    torch.cuda.synchronize()\n",
        "if not torch.cuda.is_available():\n    pass\nelse:\n    torch.cuda.synchronize()\n",
        "if args.fast and torch.cuda.device_count():\n    torch.cuda.synchronize()\n",
        "use_cuda = not args.no_cuda and torch.cuda.is_available()\nif use_cuda:\n    model = Net().cuda()\n",
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n",
        "if device.type == 'neuron':\n    pass\nelse:\n    torch.cuda.synchronize()\n",
        "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n",
    ],
)
def test_code_under_a_test_false_on_neuron_is_not_reachable(guarded: str) -> None:
    assert [kind for _, kind, _ in _verify("import torch\n" + guarded)] == []


@pytest.mark.parametrize(
    "reachable",
    [
        "if torch.neuron.is_available():\n    torch.cuda.synchronize()\n",
        "if device.type == 'neuron':\n    torch.cuda.synchronize()\n",
        "if args.gpu:\n    torch.cuda.synchronize()\n",
        "if torch.cuda.is_available():\n    pass\nelse:\n    torch.cuda.synchronize()\n",
        "while torch.accelerator.is_available() and step < 3:\n    torch.cuda.synchronize()\n",
    ],
)
def test_code_the_port_made_reachable_or_under_an_unknown_test_is_checked(reachable: str) -> None:
    assert [(kind, code) for _, kind, code in _verify("import torch\n" + reachable)] == [("cuda-only", "NRN103")]


def test_availability_queries_themselves_are_harmless_but_a_device_count_value_is_not() -> None:
    source = "import torch\nok = torch.cuda.is_available()\nworld = torch.cuda.device_count()\n"
    assert _verify(source) == [(3, "cuda-only", "NRN103")]


def test_strings_count_only_where_they_are_a_device_or_backend_value() -> None:
    source = (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "print('cuda')\nkind = 'cuda'\nnames = {'cuda': 'nccl', 'cpu': 'gloo'}\nlabel = 'cuda' + '_x'\n"
        "ok = device == 'cuda'\nprint(f'cuda:{rank}')\n"
        "dist.init_process_group('nccl')\n"  # 10
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
        "os.environ.setdefault('NCCL_DEBUG', 'INFO')\n"
        "def pick(device='cuda:0'):\n    return device\n"  # 13
        "cfg = {'device': f'cuda:{rank}'}\n"
        # error codes looked for in an exception's text are not settings
        "oom = any(s in str(e) for s in ('CUBLAS_STATUS_ALLOC_FAILED', 'CUDNN_STATUS_INTERNAL_ERROR'))\n"
    )
    assert _verify(source) == [
        (10, "cuda-only", "NRN301"), (11, "cuda-only", "NRN303"), (12, "cuda-only", "NRN114"),
        (13, "cuda-only", "NRN101"), (15, "cuda-only", "NRN101"),
    ]


def test_data_parallel_is_found_when_built_not_when_unwrapped() -> None:
    source = "import torch\nm = m.module if isinstance(m, torch.nn.DataParallel) else m\nm = torch.nn.DataParallel(m)\n"
    assert _verify(source) == [(3, "cuda-only", "NRN109")]


def test_libraries_imports_and_uses() -> None:
    source = (
        "import apex\n"  # whole package: its uses decide
        "import pynvml\n"  # 2: unused, unguarded -> the import
        "from flash_attn import flash_attn_func\n"
        "try:\n    import xformers\nexcept ImportError:\n    xformers = None\n"  # guarded, unused: fine
        "# porter: NRN903 marked\nimport xformers.ops as xops\n"
        "model, opt = apex.amp.initialize(model, opt)\n"  # 10: unmarked use of apex
        "# porter: NRN901 marked\nnorm = apex.normalization.FusedLayerNorm(8)\n"
        "out = flash_attn_func(q, k, v)\n"  # 13
        "y = xops.memory_efficient_attention(q, k, v)\n"  # covered by the marked import
    )
    assert _verify(source) == [(2, "cuda-only", "NRN908"), (10, "cuda-only", "NRN901"), (13, "cuda-only", "NRN902")]


def test_kernels_and_calls_of_the_table() -> None:
    source = (
        "import subprocess\nimport torch\nfrom torch.utils.cpp_extension import load\nfrom kernels import get_kernel\n"
        "ext = load(name='x', sources=['x.cu'])\n"
        "act = get_kernel('kernels-community/activation')\n"
        "y = torch._scaled_mm(a, b, scale_a=s, scale_b=t)\n"
        "subprocess.run(['nvidia-smi'])\n"
        "if torch.version.cuda:\n    fast = True\n"
        "print(torch.version.cuda)\n"
    )
    assert [(line, code) for line, _, code in _verify(source)] == [
        (5, "NRN906"), (6, "NRN909"), (7, "NRN910"), (8, "NRN911"), (9, "NRN912"),
    ]


def test_the_rule_marks_everything_the_verifier_looks_for() -> None:
    """cuda-only-deps on its own fixtures: after the port the verifier finds no library left."""
    for case in sorted((ROOT / "tests/fixtures/cuda-only-deps").glob("*.in.py")):
        if case.name.startswith("noop"):
            continue
        result = port_source(case.read_bytes(), case.name)  # all rules: the optimizer rules own bnb/apex optimizers
        assert isinstance(result, Success), case
        left = [f for f in result.findings if f.code and f.code.startswith("NRN9")]
        assert not left, (case.name, left)


# --------------------------------------------------------------------------- torch.neuron API
@pytest.mark.parametrize(
    ("call", "problem"),
    [
        ("torch.neuron.Stream(0)", "positional"),
        ("torch.neuron.Event(enable_timing=True, interprocess=True)", "unexpected keyword interprocess"),
        ("torch.neuron.is_bf16_supported(including_emulation=False)", "unexpected keyword"),
        ("torch.neuron.set_device()", "missing required argument device"),
        ("torch.neuron.set_rng_state(new_state=s)", "unexpected keyword new_state"),
        ("torch.neuron.device(0, device_spec=1)", "given twice"),
        ("torch.neuron.mem_get_info()", "does not exist"),
        ("torch.neuron.memory.no_such()", "does not exist"),
    ],
)
def test_emitted_neuron_calls_that_do_not_bind(call: str, problem: str) -> None:
    found = verify_port(cst.parse_module(f"import torch\nx = {call}\n"), "t.py", False)
    assert [(f.line, f.kind) for f in found] == [(2, FindingKind.NEURON_API)]
    assert problem in found[0].message


def test_emitted_neuron_calls_that_bind() -> None:
    source = (
        "import torch as th\nth.neuron.Stream(device=d, priority=-1)\nth.neuron.Event(enable_timing=True)\n"
        "th.neuron.set_device(local_rank)\nth.neuron.synchronize()\nth.neuron.memory.memory_allocated()\n"
        "th.neuron.get_device_properties(0).total_memory\nth.neuron.manual_seed(*seeds)\nf = th.neuron.is_available\n"
    )
    # (unguarded, memory_allocated and manual_seed lose a CPU run: that is the cpu-fallback check's)
    assert [found for found in _verify(source) if found[1] != "cpu-fallback"] == []


def test_every_table_entry_binds_its_own_parameters_and_rejects_a_stranger() -> None:
    for name, entry in TABLE.items():
        if entry.kind == "module":
            continue
        args = ", ".join(f"{p.name}=1" for p in entry.params if p.kind != "var_keyword")
        call = cst.ensure_type(cst.parse_expression(f"torch.neuron.{name}({args})"), cst.Call)
        assert bind_problem(entry, call) is None, name
        takes_kwargs = any(p.kind == "var_keyword" for p in entry.params)
        stranger = cst.ensure_type(cst.parse_expression(f"torch.neuron.{name}({args}{', ' if args else ''}zz_unknown=1)"), cst.Call)
        assert (bind_problem(entry, stranger) is None) == takes_kwargs, name
        if any(p.default is REQUIRED and p.kind != "var_keyword" for p in entry.params):
            empty = cst.ensure_type(cst.parse_expression(f"torch.neuron.{name}()"), cst.Call)
            assert "missing" in (bind_problem(entry, empty) or ""), name


# --------------------------------------------------------------------------- CPU fallback
def test_a_lost_cpu_fallback_is_found() -> None:
    original = "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    assert _original_fallback(original)
    assert _verify("import torch\ndevice = 'neuron'\n", fallback=True) == [(1, "cpu-fallback", "NRN101")]
    kept = "import torch\ndevice = 'neuron' if torch.accelerator.is_available() else 'cpu'\n"
    assert _verify(kept, fallback=True) == []


@pytest.mark.parametrize(
    "guard",
    [
        "if torch.accelerator.is_available():\n    torch.neuron.empty_cache()\n",
        "if device.type == 'neuron':\n    torch.neuron.empty_cache()\n",
        "used = torch.accelerator.is_available() and torch.neuron.memory_allocated()\n",
        "peak = torch.neuron.max_memory_allocated() if torch.accelerator.is_available() else 0\n",
        "if device != 'cpu' and not spawned:\n    torch.neuron.empty_cache()\n",
        "try:\n    torch.neuron.empty_cache()\nexcept AttributeError:\n    pass\n",
    ],
)
def test_a_guarded_neuron_call_keeps_the_cpu_run(guard: str) -> None:
    assert _verify("import torch\n" + guard) == []


def test_an_unguarded_neuron_call_that_cuda_made_on_the_cpu_is_a_lost_fallback() -> None:
    # Seen on real code (round 2 of the review): torch.cuda.empty_cache() in code that also runs on
    # the CPU, ported to an unconditional torch.neuron.empty_cache().
    assert _verify("import torch\ntorch.neuron.empty_cache()\n") == [(2, "cpu-fallback", "NRN103")]
    # torch.cuda.synchronize() already failed without CUDA: the port loses nothing there
    assert _verify("import torch\ntorch.neuron.synchronize()\n") == []


def test_what_counts_as_a_fallback_in_the_original() -> None:
    assert _original_fallback("import torch\nif torch.cuda.is_available():\n    model.cuda()\n")
    assert _original_fallback("import torch\nuse_cuda = torch.cuda.is_available()\n")
    # a CUDA-only switch under the test places nothing: removing it loses no fallback
    assert not _original_fallback("import torch\nif torch.cuda.is_available():\n    torch.backends.cudnn.benchmark = True\n")
    assert not _original_fallback("import torch\nx = torch.zeros(2)\n")


def test_the_engine_reports_a_lost_fallback_on_the_port() -> None:
    source = b"import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\nx = torch.ones(2, device=device)\n"
    result = port_source(source, "t.py")
    assert isinstance(result, Success)
    lost = [f for f in result.findings if f.kind is FindingKind.CPU_FALLBACK]
    has_test = "is_available()" in result.new_text or "current_accelerator" in result.new_text
    assert bool(lost) != has_test, result.new_text


# --------------------------------------------------------------------------- results
def test_findings_ride_on_success_and_unchanged_and_pickle() -> None:
    changed = port_source(b"import torch\nimport triton\ntorch.cuda.synchronize()\n", "a.py", rules=[CudaOnlyDeps])
    assert isinstance(changed, Success)
    assert [(f.line, f.code) for f in changed.findings] == [(4, "NRN103")]  # the line in the output
    same = port_source(b"import torch\ntorch.cuda.synchronize()\n# porter: NRN904 kept\nimport triton\n", "b.py", rules=[CudaOnlyDeps])
    assert isinstance(same, Unchanged) and same.skipped is None
    assert [(f.line, f.code) for f in same.findings] == [(2, "NRN103")]
    skipped = port_source(b"x = 1\n", "c.py")
    assert isinstance(skipped, Unchanged) and skipped.findings == ()
    for result in (changed, same):
        assert pickle.loads(pickle.dumps(result)) == result
    finding = changed.findings[0]
    assert isinstance(finding, Finding) and finding.to_dict()["kind"] == "cuda-only"
    with pytest.raises(AttributeError):
        finding.line = 1  # type: ignore[misc]


@pytest.mark.corpus  # a sweep over every fixture and sample: out of the fast loop, still in CI
def test_samples_port_with_nothing_unmarked_left() -> None:
    for path in sorted((ROOT / "samples").rglob("*.py")):
        result = ported(path.read_bytes(), str(path), Options())
        if isinstance(result, Failure):
            continue  # a known engine refusal (reported elsewhere): nothing written, nothing to verify
        findings = getattr(result, "findings", ())
        assert not findings, (path.name, [(f.line, f.code, f.message) for f in findings])


# --------------------------------------------------------------------------- reachability on Neuron (corpus round)
def test_code_after_the_guarded_import_of_a_library_trainium_lacks_does_not_run() -> None:
    source = (
        "import torch\n"
        "try:\n"
        "    import apex\n"
        "    HAVE_APEX = hasattr(apex, 'optimizers')\n"
        "    SUPPORTED = [apex.optimizers.FusedAdam]\n"
        "except ImportError:\n"
        "    HAVE_APEX = False\n"
        "if HAVE_APEX:\n"
        "    opts = (apex.optimizers.FusedAdam,)\n"
        "try:\n"
        "    import flash_attn\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    f = flash_attn.flash_attn_func\n"
    )
    assert _verify(source) == []
    # bitsandbytes has CPU builds: installed on Trainium, its use there is still found
    bnb = "try:\n    import bitsandbytes as bnb\nexcept ImportError:\n    pass\nelse:\n    opt = bnb.optim.AdamW8bit([])\n"
    assert [f[2] for f in _verify(bnb)] == ["NRN905"]
    # an apex use outside the try still is
    assert [f[0] for f in _verify("try:\n    import apex\nexcept ImportError:\n    apex = None\nx = apex.amp.initialize(1)\n")] == [5]


def test_torch_version_tests_older_than_torchneuron_are_decided() -> None:
    source = (
        "import torch\n"
        "from packaging import version\n"
        "if version.parse(torch.__version__) < version.parse('2.4.0'):\n"
        "    KEY = torch.cuda.amp.grad_scaler.GradScaler\n"
        "OLD = version.parse(torch.__version__).release < (2, 3)\n"
        "if OLD:\n"
        "    from torch.cuda.amp import GradScaler\n"
        "    s = GradScaler()\n"
        "if digit_version(torch.__version__) >= digit_version('2.0.0'):\n"
        "    pass\n"
        "else:\n"
        "    torch.cuda.synchronize()\n"
        "if version.parse(torch.__version__) >= version.parse('2.20'):\n"
        "    torch.cuda.synchronize()\n"
    )
    assert [f[0] for f in _verify(source)] == [14]  # a release newer than TorchNeuron's first: unknown


def test_a_cuda_class_named_in_an_annotation_is_harmless() -> None:
    source = "from torch.cuda.amp import GradScaler\ndef make() -> GradScaler:\n    return None\nx: GradScaler = None\n"
    assert _verify(source) == []
    assert [f[0] for f in _verify("from torch.cuda.amp import GradScaler\ns = GradScaler()\n")] == [2]


def test_a_list_of_backend_names_chooses_no_device() -> None:
    assert _verify("SUPPORTED_ACCELERATOR_LIST = ['cuda', 'cpu', 'xpu', 'npu', 'mps']\n") == []
    assert [f[2] for f in _verify("devices = ['cpu', 'cuda']\n")] == ["NRN101"]


def test_cuda_as_the_cpu_host_default_of_the_present_accelerator_is_not_a_finding() -> None:
    # accelerator style: "cuda" only where current_accelerator() is None (a CPU-only host, as before)
    kept = 'import torch\nscaler = torch.amp.GradScaler(getattr(torch.accelerator.current_accelerator(), "type", "cuda"))\n'
    assert _verify(kept) == []
    other = 'import torch\nscaler = torch.amp.GradScaler(getattr(config, "device", "cuda"))\n'
    assert _verify(other) == [(2, "cuda-only", "NRN101")]


def test_a_profiler_activity_marker_covers_its_cuda_activity() -> None:
    """NRN111 marks activities=["cpu", "cuda"] (a profiler activity, not a device): the verifier
    does not count that "cuda" as a device left unmarked (torchrl's dreamer, the corpus run)."""
    source = (
        "import torch\n"
        '# porter: NRN111 the profiler activity "cuda" records nothing on Neuron\n'
        'collector.enable_profile(activities=["cpu", "cuda"] if cfg.profile_cuda else ["cpu"])\n'
        'dev = torch.device("cuda")\n'  # 4: a device, still found
    )
    assert _verify(source) == [(4, "cuda-only", "NRN101")]


# --------------------------------------------------------------------------- the walk
def _walk_calls(module: cst.Module, walk: str) -> list[tuple[str, int, object]]:
    """What a walk of the verifier asks, in order: each check (node, inside a test) and test value."""
    from porter.engine.verify import Verifier

    tree = TreeIndex(module)
    names = LazyQualifiedNames(tree, lambda: MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider))
    verifier = Verifier(tree, names, lambda node: (0, 0), "t.py")
    verifier._learn_flags()
    calls: list[tuple[str, int, object]] = []
    check, value = verifier._check, verifier.value

    def checked(node: cst.CSTNode, in_test: bool) -> None:
        calls.append(("check", tree.order[node], in_test))
        check(node, in_test)

    def valued(test: cst.BaseExpression) -> bool | None:
        found = value(test)
        calls.append(("value", tree.order[test], found))
        return found

    verifier._check, verifier.value = checked, valued  # type: ignore[method-assign]
    getattr(verifier, walk)()
    return calls


WALKED = '''\
import torch
try:
    import apex
    x = apex.amp.initialize(m).cuda()
except ImportError:
    y = "cuda" if torch.cuda.is_available() else "cpu"
else:
    z = torch.cuda.synchronize()
finally:
    w = 1
try:
    from flash_attn import f
    g = f(x).cuda()
except ImportError:
    pass
else:
    h = torch.cuda.synchronize()
if torch.cuda.is_available() and "cuda" in device:
    a.cuda()
elif not torch.cuda.is_available():
    b = torch.cuda.current_device()
else:
    c = [d for d in ("cuda", "cpu") if d == "cuda"]
while torch.cuda.device_count() > 0:
    e = torch.cuda.memory_allocated()
else:
    f = x.cuda() if hasattr(torch, "neuron") else "nccl"
assert torch.version.cuda is not None, torch.cuda.get_device_name()
'''


def test_the_pre_order_walk_asks_what_the_stack_walk_asks() -> None:
    """The verifier's walk over the pre-order list (unreachable code jumped over, test expressions
    marked by position) checks the same nodes, with the same test flags, in the same order, and
    evaluates the same tests, as the walk with a stack of every node."""
    sources = [WALKED] + [path.read_text() for path in sorted(ROOT.joinpath("samples").rglob("*.py"))[:40]]
    for source in sources:
        module = cst.parse_module(source)
        walked = _walk_calls(module, "_walk")
        assert walked == _walk_calls(module, "_walk_stack")
    assert any(kind == "value" and found is False for kind, _, found in _walk_calls(cst.parse_module(WALKED), "_walk"))
