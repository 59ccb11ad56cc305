"""Requirement strings: parse one, and the tables that say what a CUDA pin becomes.

Only the parts porter edits are parsed: the distribution name, the version specifiers (where a
CUDA local version ``+cu121`` lives) and where the marker (``; python_version...``) starts. A
string that does not look like a PEP 508 requirement is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# TorchNeuron package families (AWS Neuron docs, TorchNeuron overview (torch/index)): torch-neuronx 2.13.x <-> torch 2.13.0, 2.14.x <-> 2.14.0.
FAMILIES: dict[str, str] = {"2.13": "2.13.0", "2.14": "2.14.0"}
DEFAULT_FAMILY = "2.14"
NEURON_INDEX = "https://pip.repos.neuron.amazonaws.com"
NEURON_PACKAGE = "torch-neuronx"
NEURON_COMMENT = "torch-neuronx installs from the Neuron package repository, not PyPI (PyPI has only a placeholder)"
FRESH_ENV_COMMENT = "install into a fresh environment: never mix a stock (CUDA) torch with torch-neuronx"

_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*")
_LOCAL_CUDA = re.compile(r"\+cu(?:da)?\d[\d.]*")
_EXACT = re.compile(r"^\s*===?\s*(\d+)\.(\d+)(?:\.(\d+))?\s*$")
CUDA_INDEX = re.compile(r"(https?://download\.pytorch\.org/whl/(?:nightly/|test/)?)(cu\d+)\b")
NVIDIA_INDEX = re.compile(r"https?://pypi\.(?:ngc\.)?nvidia\.com\S*")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Requirement:
    """A requirement string split at the points porter edits. Offsets are into ``text``."""

    text: str
    name: str
    spec_start: int  # first character after the name and extras
    spec_end: int  # where the environment marker or a URL starts (or the end)

    @property
    def key(self) -> str:
        return normalize(self.name)

    @property
    def spec(self) -> str:
        return self.text[self.spec_start : self.spec_end]

    def local_cuda_spans(self) -> list[tuple[int, int]]:
        """Spans (into ``text``) of CUDA local versions such as ``+cu121`` in the specifiers."""
        return [(self.spec_start + m.start(), self.spec_start + m.end()) for m in _LOCAL_CUDA.finditer(self.spec)]

    def exact_version(self) -> tuple[int, int, int] | None:
        """``(major, minor, patch)`` of an ``==X.Y[.Z]`` pin once its local version is removed."""
        match = _EXACT.match(_LOCAL_CUDA.sub("", self.spec))
        if not match:
            return None
        return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)

    @property
    def is_url(self) -> bool:
        return "@" in self.text[self.spec_start :].split(";", 1)[0]


def parse(text: str) -> Requirement | None:
    """A requirement, or None for options (``-r``, ``--index-url``), paths, URLs and blanks."""
    if not text.strip() or text.lstrip().startswith(("-", ".", "/", "#")) or "://" in text.split("@", 1)[0]:
        return None
    match = _NAME.match(text)
    if not match:
        return None
    rest = text[match.end() :]
    if rest and not re.match(r"[<>=!~;@(,]|\s*$", rest):
        return None
    end = len(text)
    for stop in (";", " #", "\t#"):
        found = text.find(stop, match.end())
        if found != -1:
            end = min(end, found)
    head = text[:end].rstrip()
    if head.endswith("\\"):  # a continued line (hashes follow): the backslash is no specifier
        head = head[:-1].rstrip()
    return Requirement(text, match.group(1), match.end(), max(len(head), match.end()))


def family_for(requirement: Requirement, default: str) -> tuple[str | None, bool]:
    """The torch-neuronx family that fits a torch requirement, and whether torch must be re-pinned.

    An exact pin in a family keeps it; an exact pin outside them is re-pinned to ``default``; a
    range is kept when it admits the family's torch (checked with ``packaging`` when installed).
    ``(None, False)``: a range that admits no family — a human has to choose.
    """
    exact = requirement.exact_version()
    if exact is not None:
        family = f"{exact[0]}.{exact[1]}"
        return (family, False) if family in FAMILIES else (default, True)
    spec = _LOCAL_CUDA.sub("", requirement.spec).strip().strip("()")
    if not spec:
        return default, False
    admitted = _admits(spec)
    if admitted is None:
        return default, False  # no packaging installed: trust the range
    for family in (default, *sorted(FAMILIES, reverse=True)):
        if FAMILIES[family] in admitted:
            return family, False
    return None, False


def _admits(spec: str) -> set[str] | None:
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
    except ImportError:
        return None
    try:
        specifiers = SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    return {version for version in FAMILIES.values() if specifiers.contains(version, prereleases=True)}


# Packages whose version is tied to a torch release: an exact pin must move with torch.
COMPANIONS: frozenset[str] = frozenset({"torchvision", "torchaudio", "torchtext", "torchdata", "torchrec", "torchao"})


@dataclass(frozen=True)
class CudaOnly:
    """A CUDA-only distribution: ``remove`` comments its line out; otherwise it gets a marker."""

    message: str
    remove: bool


SDPA = "torch.nn.functional.scaled_dot_product_attention"
_CUDA_ONLY: dict[str, CudaOnly] = {
    "flash-attn": CudaOnly(f"flash-attn builds CUDA kernels only; use {SDPA}", True),
    "apex": CudaOnly("apex is CUDA-only; use torch.autocast / torch.optim / torch.nn equivalents", True),
    "xformers": CudaOnly(f"xformers is CUDA-only; use {SDPA}", True),
    "mamba-ssm": CudaOnly("mamba-ssm ships CUDA kernels only; use a torch implementation of the scan", True),
    "causal-conv1d": CudaOnly("causal-conv1d ships CUDA kernels only; use torch conv1d with left padding", True),
    "flashinfer-python": CudaOnly(f"FlashInfer is CUDA-only; use {SDPA}", True),
    "flashinfer": CudaOnly(f"FlashInfer is CUDA-only; use {SDPA}", True),
    "transformer-engine": CudaOnly("Transformer Engine (FP8) is CUDA-only; use torch.nn layers under bf16", True),
    "transformer-engine-torch": CudaOnly("Transformer Engine is CUDA-only; use torch.nn layers under bf16", True),
    "pycuda": CudaOnly("PyCUDA is CUDA-only; use torch ops or an NKI kernel", True),
    "torch-tensorrt": CudaOnly("TensorRT is NVIDIA-only; use torch.compile(backend=\"neuron\")", True),
    "tensorrt": CudaOnly("TensorRT is NVIDIA-only; use torch.compile(backend=\"neuron\")", True),
    "pytorch-cuda": CudaOnly("conda CUDA runtime for pytorch; not used on Trainium", True),
    "cudatoolkit": CudaOnly("CUDA toolkit; not used on Trainium", True),
    "cuda-toolkit": CudaOnly("CUDA toolkit; not used on Trainium", True),
    "cudnn": CudaOnly("cuDNN is CUDA-only; not used on Trainium", True),
    "nccl": CudaOnly("NCCL is CUDA-only; the neuron process group replaces it", True),
    "bitsandbytes": CudaOnly("bitsandbytes 8/4-bit kernels are CUDA-only; train in bf16 (AdamW fused)", False),
    "deepspeed": CudaOnly("DeepSpeed's CUDA ops do not build for Neuron; check the engine/ZeRO path or use FSDP2", False),
    "triton": CudaOnly("Triton does not target Neuron; remove it unless another package needs it", False),
    "liger-kernel": CudaOnly("Liger kernels are Triton (CUDA) only; use the plain torch/transformers modules", False),
    "pynvml": CudaOnly("NVML is NVIDIA-only; use neuron-top / neuron-monitor", False),
    "nvidia-ml-py": CudaOnly("NVML is NVIDIA-only; use neuron-top / neuron-monitor", False),
    "gpustat": CudaOnly("gpustat reads NVML (NVIDIA-only); use neuron-top", False),
    "onnxruntime-gpu": CudaOnly("onnxruntime-gpu is the CUDA build; use onnxruntime", False),
    "vllm": CudaOnly("the vllm wheel is the CUDA build; Trainium inference uses the Neuron vLLM plugin", False),
    "auto-gptq": CudaOnly("AutoGPTQ kernels are CUDA-only", False),
    "autoawq": CudaOnly("AutoAWQ kernels are CUDA-only", False),
}
_CUDA_ONLY_PREFIXES: tuple[tuple[str, CudaOnly], ...] = (
    ("cupy-cuda", CudaOnly("CuPy CUDA build; use torch tensor ops on the neuron device", True)),
    ("nvidia-dali", CudaOnly("NVIDIA DALI decodes on CUDA; use a torch DataLoader", True)),
    ("nvidia-cu", CudaOnly("NVIDIA CUDA runtime wheel; not used on Trainium", True)),
    ("nvidia-nccl", CudaOnly("NCCL is CUDA-only; the neuron process group replaces it", True)),
    ("nvidia-nvjitlink", CudaOnly("NVIDIA CUDA runtime wheel; not used on Trainium", True)),
    ("nvidia-nvtx", CudaOnly("NVIDIA CUDA runtime wheel; not used on Trainium", True)),
    ("nvidia-cusparse", CudaOnly("NVIDIA CUDA runtime wheel; not used on Trainium", True)),
)


def cuda_only(name: str) -> CudaOnly | None:
    key = normalize(name)
    if key in _CUDA_ONLY:
        return _CUDA_ONLY[key]
    for prefix, entry in _CUDA_ONLY_PREFIXES:
        if key.startswith(prefix):
            return entry
    return None


def neuron_pin(family: str) -> str:
    return f"{NEURON_PACKAGE}=={family}.*"
