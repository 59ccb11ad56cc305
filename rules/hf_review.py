"""NRN851: Hugging Face settings porter cannot read in the script: review markers in ported files."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.changes import Safety
from porter.rule import Rule
from porter.rules._helpers import keyword, string_value
from porter.rules._hf_table import ACCELERATOR_CLASSES
from porter.rules.hf_from_pretrained import model_from_pretrained
from porter.rules.hf_training_args import MISSING, literal


class HfReview(Rule):
    """Mark Hugging Face settings that decide CUDA-only behaviour at run time.

    What it does:
        In files that are being ported, adds an NRN851 marker above
        ``Accelerator(mixed_precision=<variable>)`` (the value comes from the command line or
        a config: it must not be ``"fp16"``/``"fp8"`` on Neuron) and above a Transformers
        ``from_pretrained(..., device_map="auto")`` (same receiver check as NRN811). NRN852
        marks the construction (or ``from_pretrained``) of a Transformers
        ``*ForSequenceClassification`` model when the file never sets ``problem_type``.

    Why:
        Literal values are ported by NRN831/NRN812; a value porter cannot see needs a person.
        ``device_map="auto"`` asks accelerate for the devices' free memory, and accelerate
        1.15's ``get_max_memory`` knows CUDA, NPU, MLU, MUSA, XPU, HPU and SDAA but not
        Neuron: it finds no device and places the whole model on the CPU (read in the
        installed accelerate 1.15 ``utils/modeling.py``). The sequence-classification heads of
        transformers 5.24 assign ``self.config.problem_type`` inside the first ``forward``
        when it is None; Dynamo guards on it, so the second step recompiles the whole model
        (seen by ``porter check`` on both Hugging Face samples: one extra compile, which on
        Neuron costs a full neuronx-cc run).

    Before:
        accelerator = Accelerator(mixed_precision=args.mixed_precision)

    After:
        # porter: NRN851 mixed_precision comes from a variable: use "bf16" or "no" on Neuron (fp16/fp8 are CUDA-only)
        accelerator = Accelerator(mixed_precision=args.mixed_precision)

    Safety:
        Review markers only; the code is unchanged. The right ``problem_type``
        ("regression" for one label, "single_label_classification" for integer labels,
        "multi_label_classification" for float multi-hot labels) depends on the labels, which
        porter cannot see, so it is not written. Runs only in files that are being ported,
        so CPU-only Hugging Face scripts (where ``device_map="auto"`` is a normal offloading
        choice) are left as they are.
    """

    code: ClassVar[str] = "NRN851"
    name: ClassVar[str] = "hf-review"
    summary: ClassVar[str] = 'Accelerator(mixed_precision=<variable>), from_pretrained(device_map="auto") -> review marker'
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("Accelerator", "device_map", "ForSequenceClassification")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN852": "*ForSequenceClassification without config.problem_type: review marker (one recompile)",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 84

    def _problem_type(self, call: cst.Call) -> None:
        """``XForSequenceClassification(config)`` / ``.from_pretrained(...)`` with no problem_type set."""
        if "problem_type" in self.context.text:
            return
        func = call.func
        target = func.value if isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained" else func
        names = self.qualified(target)
        if any(name.startswith("transformers.") and name.endswith("ForSequenceClassification") for name in names):
            self.mark(call, 'set config.problem_type (e.g. "single_label_classification"): the first forward sets it '
                      "and the compiled graph recompiles once", code="NRN852")

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified(node.func) & ACCELERATOR_CLASSES:
            arg = keyword(node, "mixed_precision")
            if arg is not None and literal(arg.value) is MISSING:
                self.mark(node, 'mixed_precision comes from a variable: use "bf16" or "no" on Neuron (fp16/fp8 are CUDA-only)')
            return
        self._problem_type(node)
        arg = keyword(node, "device_map")
        if arg is not None and string_value(arg.value) == "auto" and model_from_pretrained(self, node):
            self.mark(node, 'device_map="auto" finds no Neuron memory (accelerate 1.15) and loads on the CPU: use device_map="neuron"')
