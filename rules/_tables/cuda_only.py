"""The data table behind the CUDA-only dependency markers (NRN901-NRN912), also read by the
post-port verifier (``porter/engine/verify.py``).

Each entry names a qualified-name prefix, the code, the one-line marker text and where the marker
goes: ``import`` — on the import that brings the library in (a use of a module imported only as
its top-level package, ``import apex`` then ``apex.amp.initialize(...)``, is marked instead);
``call`` — on each statement calling it (the call site holds what must change: sources,
backends); ``decorator`` — on the decorated function (a kernel definition). ``exclude`` lists
sub-prefixes other rules own (apex and bitsandbytes optimizers: the optimizer rules NRN5xx).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    code: str
    prefix: str
    message: str
    where: str = "import"
    exclude: tuple[str, ...] = ()

    def covers(self, name: str) -> bool:
        """Whether the qualified ``name`` falls under this entry (and not under an exclusion)."""
        inside = name == self.prefix or name.startswith(self.prefix + ".")
        return inside and not any(name == e or name.startswith(e + ".") for e in self.exclude)


SDPA = "F.scaled_dot_product_attention"

ENTRIES: tuple[Entry, ...] = (
    # NRN901 apex (apex.optimizers: optimizer rules)
    Entry("NRN901", "apex.amp", "apex.amp is CUDA-only: use torch.autocast(device_type=\"neuron\", dtype=torch.bfloat16) and loss.backward() (no loss scaling)"),
    Entry("NRN901", "apex.normalization.FusedLayerNorm", "apex FusedLayerNorm is CUDA-only: use torch.nn.LayerNorm (same arguments)"),
    Entry("NRN901", "apex.normalization.FusedRMSNorm", "apex FusedRMSNorm is CUDA-only: use torch.nn.RMSNorm (same arguments)"),
    Entry("NRN901", "apex.normalization", "apex.normalization is CUDA-only: use torch.nn.LayerNorm / torch.nn.RMSNorm"),
    Entry("NRN901", "apex.parallel.DistributedDataParallel", "apex DDP is CUDA-only: use torch.nn.parallel.DistributedDataParallel with backend \"neuron\""),
    Entry("NRN901", "apex.parallel.SyncBatchNorm", "apex SyncBatchNorm is CUDA-only: use torch.nn.SyncBatchNorm"),
    Entry("NRN901", "apex.parallel.convert_syncbn_model", "apex convert_syncbn_model is CUDA-only: use torch.nn.SyncBatchNorm.convert_sync_batchnorm"),
    Entry("NRN901", "apex.parallel", "apex.parallel is CUDA-only: use torch.nn.parallel.DistributedDataParallel / torch.nn.SyncBatchNorm"),
    Entry("NRN901", "apex", "apex CUDA extension: use the torch.nn / torch.optim equivalent", exclude=("apex.optimizers",)),
    # NRN902 flash-attention
    Entry("NRN902", "flash_attn", f"flash_attn is CUDA-only: use {SDPA}(q, k, v, is_causal=...) with (batch, heads, seq, dim) tensors"),
    # NRN903 xformers
    Entry("NRN903", "xformers", f"xformers is CUDA-only: use {SDPA} (inputs are (batch, heads, seq, dim); bias -> attn_mask)"),
    # NRN904 Triton kernels
    Entry("NRN904", "triton.jit", "Triton kernel: Triton does not target Neuron; use torch ops (torch.compile(backend=\"neuron\") fuses them) or an NKI kernel", where="decorator"),
    Entry("NRN904", "triton.autotune", "Triton kernel: Triton does not target Neuron; use torch ops (torch.compile(backend=\"neuron\") fuses them) or an NKI kernel", where="decorator"),
    Entry("NRN904", "triton.heuristics", "Triton kernel: Triton does not target Neuron; use torch ops (torch.compile(backend=\"neuron\") fuses them) or an NKI kernel", where="decorator"),
    Entry("NRN904", "triton", "Triton does not target Neuron: replace the kernels this file defines or launches with torch ops (torch.compile(backend=\"neuron\") fuses them) or NKI kernels"),
    # NRN905 bitsandbytes quantized layers (bitsandbytes.optim: optimizer rules)
    Entry("NRN905", "bitsandbytes", "bitsandbytes layers are CUDA-only: use torch.nn.Linear in bfloat16 (no 8/4-bit kernels on Neuron)", exclude=("bitsandbytes.optim",)),
    Entry("NRN905", "transformers.BitsAndBytesConfig", "bitsandbytes quantization is CUDA-only: load in bfloat16 (torch_dtype=torch.bfloat16) instead", where="call"),
    # NRN906 C++/CUDA extensions
    Entry("NRN906", "torch.utils.cpp_extension.load", "custom C++/CUDA extension: CUDA kernels do not run on Neuron; use torch ops or an NKI kernel", where="call"),
    Entry("NRN906", "torch.utils.cpp_extension.load_inline", "custom C++/CUDA extension: CUDA kernels do not run on Neuron; use torch ops or an NKI kernel", where="call"),
    Entry("NRN906", "torch.utils.cpp_extension.CUDAExtension", "CUDAExtension builds CUDA kernels that do not run on Neuron; use torch ops or an NKI kernel", where="call"),
    # NRN907 SDPA backend selection
    Entry("NRN907", "torch.backends.cuda.sdp_kernel", "CUDA SDPA backend selection has no effect on Neuron (TorchNeuron decomposes SDPA): remove it", where="call"),
    Entry("NRN907", "torch.nn.attention.sdpa_kernel", "CUDA SDPA backends (flash/efficient/cudnn) do not exist on Neuron: remove the context manager", where="call"),
    # NRN908 other CUDA-only libraries
    Entry("NRN908", "cupy", "CuPy is CUDA-only: use torch tensor ops on the neuron device"),
    Entry("NRN908", "pycuda", "PyCUDA is CUDA-only: use torch ops or an NKI kernel"),
    Entry("NRN908", "numba.cuda", "numba.cuda kernels are CUDA-only: use torch ops or an NKI kernel"),
    Entry("NRN908", "pynvml", "NVML is NVIDIA-only: use neuron-top / neuron-monitor, or torch.neuron memory counters"),
    Entry("NRN908", "transformer_engine", "Transformer Engine (FP8) is CUDA-only: use torch.nn layers under bf16 autocast"),
    Entry("NRN908", "liger_kernel", "Liger kernels are Triton (CUDA/ROCm) only: use the plain torch / transformers modules"),
    Entry("NRN908", "mamba_ssm", "mamba_ssm ships CUDA kernels: use a torch reference implementation of the scan"),
    Entry("NRN908", "causal_conv1d", "causal_conv1d ships CUDA kernels: use torch.nn.functional.conv1d with left padding"),
    Entry("NRN908", "flashinfer", f"FlashInfer is CUDA-only: use {SDPA}"),
    Entry("NRN908", "torch_tensorrt", "TensorRT is NVIDIA-only: use torch.compile(backend=\"neuron\")"),
    Entry("NRN908", "tensorrt", "TensorRT is NVIDIA-only: use torch.compile(backend=\"neuron\")"),
    Entry("NRN908", "nvidia.dali", "NVIDIA DALI decodes on CUDA: use a torch DataLoader (decode on CPU)"),
    Entry("NRN908", "nvidia_smi", "nvidia_smi (NVML) is NVIDIA-only: use neuron-top / neuron-monitor, or torch.neuron memory counters"),
    Entry("NRN908", "GPUtil", "GPUtil runs nvidia-smi, absent on Trainium: use torch.neuron.device_count() / neuron-ls"),
    # NRN909 Hub kernels: CUDA (ROCm, Metal, XPU) builds only
    Entry("NRN909", "kernels.get_kernel", "Hub kernels have no Neuron build: keep the torch implementation the kernel replaces", where="call"),
    Entry("NRN909", "kernels.get_local_kernel", "Hub kernels have no Neuron build: keep the torch implementation the kernel replaces", where="call"),
    # NRN910 FP8 scaled matmul (CUDA FP8 tensor cores)
    Entry("NRN910", "torch._scaled_mm", "FP8 torch._scaled_mm has no Neuron kernel: use a bfloat16 matmul (a @ b under torch.autocast(\"neuron\", dtype=torch.bfloat16)) and drop the scales", where="call"),
    Entry("NRN910", "torch._scaled_grouped_mm", "FP8 torch._scaled_grouped_mm has no Neuron kernel: use bfloat16 matmuls per group and drop the scales", where="call"),
)

# NRN911: calls that run a command line; one naming nvidia-smi is marked.
SHELL_CALLS: frozenset[str] = frozenset({
    "os.system", "os.popen", "os.execvp", "os.execlp", "subprocess.run", "subprocess.call", "subprocess.check_call",
    "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput",
})
NVIDIA_SMI = "nvidia-smi"
NVIDIA_SMI_MESSAGE = "nvidia-smi does not exist on Trainium: use neuron-ls / neuron-top (or torch.neuron.device_count() in Python)"
# NRN912: a test on torch.version.cuda (None on a Neuron torch build) silently takes the non-CUDA path.
VERSION_CUDA = "torch.version.cuda"
VERSION_CUDA_MESSAGE = "torch.version.cuda is None on Neuron, so this test takes its non-CUDA path there: test the device type (or torch.accelerator) instead"

# CUDA / NCCL environment variables: set or read, they mean nothing on Neuron (the verifier's list;
# env-settings NRN303/NRN114 port or mark them).
# ``CUBLAS_STATUS_*`` / ``CUDNN_STATUS_*`` are error codes a script looks for in an exception's text,
# not settings: never one of these.
CUDA_ENV = re.compile(r"^(?![A-Z]+_STATUS_)(CUDA_[A-Z0-9_]+|PYTORCH_CUDA_[A-Z0-9_]+|PYTORCH_NVML_[A-Z0-9_]+|NVIDIA_[A-Z0-9_]+|CUBLAS_[A-Z0-9_]+|CUBLASLT_[A-Z0-9_]+|CUDNN_[A-Z0-9_]+|TORCH_CUDNN_[A-Z0-9_]+|NCCL_[A-Z0-9_]+|TORCH_NCCL_[A-Z0-9_]+)$")

# SDPA backends that are CUDA kernels: an sdpa_kernel(...) naming only MATH is left alone.
CUDA_SDPA_BACKENDS: tuple[str, ...] = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")

# One-line summaries of the codes (the rule's extra_codes).
CODES: dict[str, str] = {
    "NRN901": "apex (amp, FusedLayerNorm, parallel): CUDA-only, review marker with the torch replacement",
    "NRN902": "flash_attn: CUDA-only, review marker (use F.scaled_dot_product_attention)",
    "NRN903": "xformers: CUDA-only, review marker (use F.scaled_dot_product_attention)",
    "NRN904": "Triton kernels (@triton.jit): review marker (torch ops or an NKI kernel)",
    "NRN905": "bitsandbytes quantized layers: CUDA-only, review marker",
    "NRN906": "torch.utils.cpp_extension loads / CUDAExtension: review marker",
    "NRN907": "torch.backends.cuda.sdp_kernel / sdpa_kernel with CUDA backends: review marker",
    "NRN908": "other CUDA-only libraries (CuPy, NVML, Transformer Engine, Liger, DALI, TensorRT...): review marker",
    "NRN909": "Hub kernels (kernels.get_kernel): no Neuron build, review marker",
    "NRN910": "FP8 torch._scaled_mm: no Neuron kernel, review marker (bfloat16 matmul)",
    "NRN911": "nvidia-smi run from Python (subprocess, os.system): review marker (neuron-ls / neuron-top)",
    "NRN912": "torch.version.cuda tests that gate behaviour: review marker (None on Neuron)",
}


def entry_for(name: str, where: str | None = None) -> Entry | None:
    """The first (most specific) entry covering the qualified ``name``."""
    for entry in ENTRIES:
        if (where is None or entry.where == where) and entry.covers(name):
            return entry
    return None


def library_for(name: str) -> Entry | None:
    """The import entry whose library ``name`` belongs to, parts other rules port included (the
    verifier's question: is this CUDA-only at all?)."""
    for entry in ENTRIES:
        if entry.where == "import" and (name == entry.prefix or name.startswith(entry.prefix + ".")):
            return entry
    return None


def triggers() -> tuple[str, ...]:
    """Raw-text words: each import entry's top-level package, plus the call/decorator spellings."""
    packages = {entry.prefix.split(".")[0] for entry in ENTRIES if entry.where == "import"}
    # Imports are what the rule marks: "import flash_attn"/"from flash_attn" rather than the bare
    # package name, which libraries mention in comments and feature checks all the time.
    words = {f"{form} {package}" for package in packages for form in ("import", "from")}
    words |= {"triton", "cpp_extension", "BitsAndBytesConfig", "sdp_kernel", "sdpa_kernel", "get_kernel",
              "get_local_kernel", "_scaled_mm", "_scaled_grouped_mm", NVIDIA_SMI, "version.cuda"}
    return tuple(sorted(words))
