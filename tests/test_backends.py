"""CUDA backends of a device abstraction are kept whole (rules/_lib/backends.py): the heuristic,
the engine's drop for every rule, the verifier's silence there, and the cache key's name bit."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, QualifiedNameProvider

from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.registry import all_rules
from porter.engine.results import Success, Unchanged
from porter.rules._lib.backend_names import cuda_named, words
from porter.rules._lib.backends import CODE, backend_scopes
from porter.run.batch import Task, key_kind

BACKEND = '''import torch
from lib.accel import Accelerator


class CUDAAccelerator(Accelerator):
    def is_available(self):
        return torch.cuda.is_available()

    def to_device(self, x):
        return x.cuda()

    def comm(self):
        return "nccl"


def train(model):
    model.cuda()
    torch.cuda.synchronize()
'''


def _scopes(source: str, path: str = "t.py") -> list[str]:
    module = cst.parse_module(source)
    names = MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
    return [scope.kind + ":" + scope.what for scope in backend_scopes(module, names, path).scopes]  # type: ignore[arg-type]


def test_words_split_underscores_and_case() -> None:
    assert words("CUDA_Accelerator") == ("cuda", "accelerator")
    assert words("DeviceGPU") == ("device", "gpu")
    assert words("CUDAAccelerator") == ("cuda", "accelerator")
    assert words("is_cuda_available") == ("is", "cuda", "available")
    assert cuda_named("pkg/accelerators/cuda.py") and cuda_named("device_gpu.py") and cuda_named("x/cuda_accelerator.in.py")
    assert not cuda_named("train.py") and not cuda_named("accelerators/cpu.py")


def test_a_cuda_named_subclass_of_an_abstraction_is_a_backend() -> None:
    assert _scopes(BACKEND) == ["class:the CUDA backend class CUDAAccelerator, implementing lib.accel.Accelerator"]
    assert _scopes("from x import Device as D\nclass GpuThing(D):\n    pass\n") == ["class:the CUDA backend class GpuThing, implementing x.Device"]


def test_ordinary_cuda_named_classes_are_not_backends() -> None:
    assert _scopes("class CudaHelper:\n    pass\nclass GPUTrainer(object):\n    pass\n") == []
    assert _scopes("import torch\nclass CudaNet(torch.nn.Module):\n    pass\n") == []
    assert _scopes("class CPUBackend(Backend):\n    pass\n") == []  # not named for CUDA
    assert _scopes("def f():\n    class CudaBackend(Backend):\n        pass\n") == []  # not top level


def test_a_class_own_cuda_method_is_kept() -> None:
    source = "class Batch:\n    def cpu(self):\n        pass\n    def cuda(self, device=None):\n        pass\n"
    assert [s.split(":")[0] for s in _scopes(source)] == ["method"]
    assert _scopes("def cuda(x):\n    return x\n") == []  # a module function is not a class's API


def test_a_cuda_named_module_holding_a_backend_is_kept_whole() -> None:
    assert [s.split(":")[0] for s in _scopes(BACKEND, "accelerators/cuda.py")] == ["module"]
    assert [s.split(":")[0] for s in _scopes(BACKEND, "accelerators/registry.py")] == ["class"]


def test_every_rule_honours_the_backend_class() -> None:
    result = port_source(BACKEND.encode(), "accelerators.py", Options())
    assert isinstance(result, Success)
    out = result.new.decode()
    head, tail = out.split("def train", 1)
    assert "torch.cuda.is_available()" in head and "x.cuda()" in head and '"nccl"' in head  # kept
    assert ".cuda()" not in tail and "torch.neuron.synchronize()" in tail  # the script is ported
    kept = [c for c in result.changes if c.code == CODE]
    assert len(kept) == 1 and kept[0].line == 5 and "porter changes nothing in it" in kept[0].message
    assert all(c.line > 13 for c in result.changes if c.code != CODE)
    assert not result.findings  # the kept CUDA is not reported as left over
    again = port_source(result.new, "accelerators.py", Options())
    assert isinstance(again, Unchanged)


def test_one_rule_selected_still_keeps_the_backend() -> None:
    for rule in all_rules():
        result = port_source(BACKEND.encode(), "cuda.py", Options(select=rule.all_codes()))
        changed = [c for c in getattr(result, "changes", ()) if c.code != CODE]
        assert not changed, (rule.code, changed)


def test_the_verifier_still_reports_cuda_left_outside_a_backend() -> None:
    source = "import torch\nclass CudaHelper:\n    def f(self):\n        torch.cuda.synchronize()\n"
    result = port_source(source.encode(), "t.py", Options(select=("NRN201",)))
    assert [f.line for f in result.findings] == [4]
    backend = "import torch\nclass CudaBackend(Backend):\n    def f(self):\n        torch.cuda.synchronize()\n"
    result = port_source(backend.encode(), "t.py", Options(select=("NRN201",)))
    assert not result.findings


def test_the_cache_key_holds_whether_the_name_says_cuda() -> None:
    def task(path: str) -> Task:
        return Task(0, path, "py", True, Options(), False)

    assert key_kind(task("a/cuda.py")) != key_kind(task("a/cpu.py"))
    assert key_kind(task("a/cpu.py")) == key_kind(task("b/train.py")) == "py"
