"""NRN114/NRN303/NRN316: CUDA, NCCL and legacy-XLA environment variables get review markers."""

from __future__ import annotations

import re
from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.branches import in_kept_cuda_branch
from porter.rules._lib.nodes import string_value
from porter.rules._tables.cuda_only import CUDA_ENV

# (pattern, code, message) — the first match wins.
_VARIABLES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"^CUDA_VISIBLE_DEVICES$"),
        "NRN303",
        "CUDA_VISIBLE_DEVICES has no effect on Neuron; under torchrun leave NEURON_RT_VISIBLE_CORES unset "
        "(each rank gets its own core; a multi-core value fails every rank), for one process set it to NeuronCore indices",
    ),
    (
        re.compile(r"^XLA_(USE|DOWNCAST)_BF16$"),
        "NRN316",
        "legacy XLA bf16 flag, ignored natively; use torch.autocast('neuron', dtype=torch.bfloat16)",
    ),
    (
        re.compile(r"^PYTORCH_CUDA_ALLOC_CONF$|^PYTORCH_NO_CUDA_MEMORY_CACHING$"),
        "NRN114",
        "CUDA allocator setting, ignored on Neuron",
    ),
    (
        re.compile(r"^NCCL_\w+$"),
        "NRN114",
        "NCCL setting, not read by the 'neuron' backend (EFA uses FI_* settings)",
    ),
    (
        re.compile(r"^(CUDA_LAUNCH_BLOCKING|CUDA_DEVICE_ORDER|CUBLAS_WORKSPACE_CONFIG|TORCH_CUDNN_V8_API_ENABLED)$"),
        "NRN114",
        "CUDA runtime setting, no effect on Neuron",
    ),
)


# Every other CUDA/NCCL variable name the verifier knows (rules/_tables/cuda_only.py: CUDA_ENV):
# TORCH_NCCL_*, PYTORCH_NVML_*, CUDA_*, CUBLAS_*, CUDNN_*, NVIDIA_* ...
_OTHER = "CUDA/NCCL setting, not read on Neuron (the neuron backend and runtime have their own)"


class EnvSettings(Rule):
    """Mark CUDA-, NCCL- and legacy-XLA-specific environment variables.

    What it does:
        Adds a review marker above any statement that names one of these environment variables
        as a string (``os.environ["..."] = ...``, ``os.environ.setdefault(...)``,
        ``os.getenv(...)``, an ``env={...}`` dict for a subprocess): ``PYTORCH_CUDA_ALLOC_CONF``,
        ``NCCL_*``, ``CUDA_LAUNCH_BLOCKING``/``CUBLAS_WORKSPACE_CONFIG`` (NRN114);
        ``CUDA_VISIBLE_DEVICES`` (NRN303, pointing to ``NEURON_RT_VISIBLE_CORES``);
        ``XLA_USE_BF16``/``XLA_DOWNCAST_BF16`` (NRN316); every other CUDA/NCCL variable name of
        the verifier's table (``TORCH_NCCL_ASYNC_ERROR_HANDLING``, ``PYTORCH_NVML_BASED_CUDA_CHECK``,
        ``CUDNN_*``: ``rules/_tables/cuda_only.py: CUDA_ENV``) wherever it is not compared with
        (a dict key of an environment, a constant holding the name) (NRN114). The code is kept.

    Why:
        None of them has an effect on Trainium: the Neuron runtime owns its allocator, the
        ``neuron`` process group does not read NCCL settings (multi-node uses EFA through
        ``FI_*`` settings, AWS Neuron docs, TorchNeuron distributed guide (torch/guides/torch-distributed)), NeuronCores are selected with ``NEURON_RT_VISIBLE_CORES``
        which TorchNeuron sets to ``LOCAL_RANK`` unless the user did — and then asserts one core
        per process, so copying a multi-GPU value into it breaks every rank (torch-neuronx source, torch_neuronx/neuron.py; torch-neuronx source, csrc/core/NeuronDevice.cpp and distributed/backend.py) — and
        ``XLA_USE_BF16``/``XLA_DOWNCAST_BF16`` were deprecated already in the XLA-based
        torch-neuronx 2.5 (AWS Neuron docs, PyTorch/XLA programming guide (archive)). Whether to drop, translate or keep them depends on the
        launch setup, so porter only marks them.

    Before:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        os.environ["CUDA_VISIBLE_DEVICES"] = str(args.gpu)

    After:
        # porter: NRN114 PYTORCH_CUDA_ALLOC_CONF: CUDA allocator setting, ignored on Neuron
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        # porter: NRN303 CUDA_VISIBLE_DEVICES has no effect on Neuron; under torchrun leave NEURON_RT_VISIBLE_CORES unset ...
        os.environ["CUDA_VISIBLE_DEVICES"] = str(args.gpu)

    Safety:
        Review markers only. Matches string literals equal to the variable name exactly, so a
        name built at run time (``"NCCL_" + key``) is missed; shell launchers are ported by
        ``porter.filetypes.shell`` (NRN191). A variable set in the CUDA branch of a device-type
        guard the port keeps (``if device_type == "cuda":``, kept because its branch is CUDA-only)
        is set only on CUDA, where it is right: no marker. Name heuristic: the string literal itself names the
        variable (no data flow is followed).
    """

    code: ClassVar[str] = "NRN114"
    name: ClassVar[str] = "env-settings"
    summary: ClassVar[str] = "PYTORCH_CUDA_ALLOC_CONF / NCCL_* / CUDA_VISIBLE_DEVICES / XLA_USE_BF16 -> review marker"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("CUDA_", "NCCL_", "XLA_", "CUBLAS", "CUDNN_", "NVIDIA_", "NVML_")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN303": "CUDA_VISIBLE_DEVICES -> review marker (NEURON_RT_VISIBLE_CORES)",
        "NRN316": "XLA_USE_BF16 / XLA_DOWNCAST_BF16 -> review marker",
    }
    order: ClassVar[int] = 50

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if value is None:
            return
        if in_kept_cuda_branch(self, node):
            return  # set only where the device is CUDA (the guard is kept): right as it is
        for pattern, code, message in _VARIABLES:
            if pattern.match(value):
                if self._is_docstring(node):
                    return
                self.mark(node, f"{value}: {message}" if code == "NRN114" else message, code=code)
                return
        if CUDA_ENV.match(value) and not self._is_docstring(node) and not isinstance(self.parent(node), (cst.Comparison, cst.ComparisonTarget)):
            self.mark(node, f"{value}: {_OTHER}")

    def _is_docstring(self, node: cst.SimpleString) -> bool:
        parent = self.parent(node)
        return isinstance(parent, cst.Expr)
