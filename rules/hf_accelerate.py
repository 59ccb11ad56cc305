"""NRN831/NRN832: Accelerate's ``Accelerator`` mixed precision and Dynamo backend for Neuron."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import keyword
from porter.rules._lib.nodes import string_value, with_string_value
from porter.rules._tables.hf import ACCELERATOR_CLASSES, CUDA_MIXED_PRECISION

# Functions that write an accelerate config with a mixed_precision= setting.
_CONFIG_WRITERS = frozenset({"accelerate.utils.write_basic_config", "accelerate.utils.config.write_basic_config"})
_NO_COMPILE = frozenset({"no", "neuron"})


class HfAccelerate(Rule):
    """Port Accelerate's precision and compile settings to Trainium.

    What it does:
        ``Accelerator(mixed_precision="fp16")`` (and ``"fp8"``) -> ``"bf16"``, also in
        ``accelerate.utils.write_basic_config(mixed_precision=...)`` (NRN831);
        ``Accelerator(dynamo_backend="inductor")`` (any backend but ``"no"``) -> ``"neuron"``
        (NRN832). Matched by qualified name (``from accelerate import Accelerator``,
        ``import accelerate as acc``). ``Accelerator(cpu=False)`` and everything else are left
        as they are; ``"cuda"`` strings in Accelerate scripts are the device rules' (NRN1xx),
        and a ``mixed_precision`` from a variable gets an NRN851 marker.

    Why:
        float16 needs a GradScaler (loss scaling), whose kernels TorchNeuron does not implement
        natively; Trainium's reduced precision is bfloat16, which Accelerate runs as autocast
        with no scaler. Accelerate's fp8 recipes (Transformer Engine, torchao, MS-AMP) are
        CUDA-only. accelerate 1.15 has a ``NEURON`` Dynamo backend (``DynamoBackend.NEURON``);
        Inductor generates Triton/C++ code that does not run on Neuron.

    Before:
        accelerator = Accelerator(mixed_precision="fp16", dynamo_backend="inductor")

    After:
        accelerator = Accelerator(mixed_precision="bf16", dynamo_backend="neuron")

    Safety:
        Review for fp16/fp8 -> bf16 (different rounding; no loss scaling needed any more).
        Settings from ``accelerate config`` YAML files or the ``accelerate launch
        --mixed_precision`` command line are not in the script and are not seen.
    """

    code: ClassVar[str] = "NRN831"
    name: ClassVar[str] = "hf-accelerate"
    summary: ClassVar[str] = 'Accelerator(mixed_precision="fp16"/"fp8") -> "bf16"; dynamo_backend -> "neuron"'
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("mixed_precision", "dynamo_backend")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN832": 'Accelerator(dynamo_backend=...) -> "neuron"',
    }
    order: ClassVar[int] = 83

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified(node.func)
        if names & ACCELERATOR_CLASSES or names & _CONFIG_WRITERS:
            self._precision(node)
        if names & ACCELERATOR_CLASSES:
            self._dynamo(node)

    def _precision(self, call: cst.Call) -> None:
        arg = keyword(call, "mixed_precision")
        if arg is None or not isinstance(arg.value, cst.SimpleString):
            return
        value = string_value(arg.value)
        if value not in CUDA_MIXED_PRECISION:
            return
        self.replace(
            arg.value,
            lambda n: with_string_value(n, "bf16"),  # type: ignore[arg-type]
            f'mixed_precision="{value}" -> "bf16" ({CUDA_MIXED_PRECISION[value]})',
        )

    def _dynamo(self, call: cst.Call) -> None:
        arg = keyword(call, "dynamo_backend")
        if arg is None or not isinstance(arg.value, cst.SimpleString):
            return
        value = string_value(arg.value)
        if value is None or value.lower() in _NO_COMPILE:
            return
        self.replace(
            arg.value,
            lambda n: with_string_value(n, "neuron"),  # type: ignore[arg-type]
            f'dynamo_backend="{value}" -> "neuron" (TorchNeuron\'s Dynamo backend)',
            code="NRN832",
            safety=Safety.SAFE,
        )
