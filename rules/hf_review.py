"""NRN851: Hugging Face settings porter cannot read in the script: review markers in ported files.

NRN852/NRN853: ``config.problem_type`` of sequence-classification models (set it, or mark it).
"""

from __future__ import annotations

import ast
import re
from typing import ClassVar, cast

import libcst as cst
from libcst.metadata import ScopeProvider

from porter.engine.astcheck import SourceFacts
from porter.engine.astcheck import keyword as ast_keyword
from porter.engine.changes import Safety
from porter.engine.rule import FileContext, Rule
from porter.rules._lib.args import add_keyword_keep_layout, keyword, positional
from porter.rules._lib.hf import MISSING, literal, model_from_pretrained
from porter.rules._lib.nodes import string_value
from porter.rules._tables.hf import ACCELERATOR_CLASSES

SINGLE_LABEL = "single_label_classification"
REGRESSION = "regression"
# A file that mentions multi-label training may feed float multi-hot labels: mark, do not guess.
_MULTI_LABEL_HINTS = re.compile(r"multi[-_ ]?label|BCEWithLogits", re.IGNORECASE)


def _num_labels_given(call: cst.Call) -> bool:
    return keyword(call, "num_labels") is not None


def _problem_type_for(call: cst.Call) -> str | None:
    """What transformers 5.24 would pick in the first forward, as far as ``num_labels`` tells:
    one label is always regression; more labels are single-label with integer targets."""
    arg = keyword(call, "num_labels")
    if arg is None:
        return None
    if isinstance(arg.value, cst.Integer):
        count = arg.value.evaluated_value
        return REGRESSION if count == 1 else SINGLE_LABEL if count > 1 else None
    return SINGLE_LABEL


class HfReview(Rule):
    """Mark Hugging Face settings that decide CUDA-only behaviour at run time.

    What it does:
        In files that are being ported, adds an NRN851 marker above
        ``Accelerator(mixed_precision=<variable>)`` (the value comes from the command line or
        a config: it must not be ``"fp16"``/``"fp8"`` on Neuron) and above a Transformers
        ``from_pretrained(..., device_map="auto")`` (same receiver check as NRN811). NRN852
        marks the construction (or ``from_pretrained``) of a Transformers
        ``*ForSequenceClassification`` model when the file never sets ``problem_type``.
        NRN853 writes ``problem_type="single_label_classification"`` instead of the NRN852
        marker when the file shows the number of labels: a ``num_labels=`` keyword on the
        model's ``from_pretrained``, or on the Transformers ``*Config(...)`` /
        ``*Config.from_pretrained(...)`` call the model is built from (inline, or a name
        assigned once in the same scope): "regression" for the literal ``1`` (transformers'
        own choice for one label, whatever the targets), "single_label_classification" otherwise.
        A call that also passes ``**kwargs`` gets the NRN852 marker: the mapping may already hold
        ``problem_type``, and a second one is a TypeError.

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

    After (NRN853):
        config = BertConfig(num_labels=3, problem_type="single_label_classification")
        model = BertForSequenceClassification(config)

    Safety:
        NRN851/NRN852 are review markers only; the code is unchanged. NRN853 is a review
        change: the right ``problem_type`` ("regression" for one label,
        "single_label_classification" for integer class labels, "multi_label_classification"
        for float multi-hot labels) depends on the labels, which the file shows only partly.
        porter writes "regression" for ``num_labels=1`` (exactly what transformers picks) and the
        single-label value (what transformers picks for more than one label and integer labels,
        the common fine-tuning case) only when ``num_labels`` is written next to the model,
        and never in a file that mentions multi-label training (``multi_label``,
        ``multi-label``, ``multilabel``, ``BCEWithLogits``): there the NRN852 marker stays. A
        ``num_labels`` computed at run time that turns out to be 1 needs "regression": check it. Runs only in files that are being ported,
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
        "NRN853": 'num_labels given, no problem_type -> problem_type="single_label_classification" (or "regression")',
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 84

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """``visit_Call`` edits a call with ``mixed_precision=`` (an Accelerator's), one with
        ``device_map=`` a plain ``"auto"`` literal (``string_value``: one ``str`` constant), or,
        when the text never names ``problem_type``, a call (or its ``.from_pretrained``) of a
        ``transformers.*ForSequenceClassification`` qualified name (``_problem_type``; an import's
        name: ``SourceFacts.import_names``)."""
        problem = "problem_type" not in facts.text
        for call in facts.of(ast.Call):
            if problem:
                func = call.func
                target = func.value if isinstance(func, ast.Attribute) and func.attr == "from_pretrained" else func
                if any(n.startswith("transformers.") and n.endswith("ForSequenceClassification") for n in facts.import_names(target)):
                    return True
            if ast_keyword(call, "mixed_precision") is not None:
                return True
            device_map = ast_keyword(call, "device_map")
            if device_map is not None and isinstance(device_map.value, ast.Constant) and device_map.value.value == "auto":
                return True
        return False

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._problem_type_set: set[int] = set()  # config calls already given a problem_type
        self._names_problem_type = "problem_type" in context.text  # once per file, not per call

    def _problem_type(self, call: cst.Call) -> None:
        """``XForSequenceClassification(config)`` / ``.from_pretrained(...)`` with no problem_type set."""
        if self._names_problem_type:
            return
        func = call.func
        pretrained = isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained"
        target = func.value if isinstance(func, cst.Attribute) and pretrained else func
        names = self.qualified(target)
        if not any(name.startswith("transformers.") and name.endswith("ForSequenceClassification") for name in names):
            return
        holder = self._labels_holder(call, pretrained)
        problem = _problem_type_for(holder) if holder is not None else None
        if problem == SINGLE_LABEL and _MULTI_LABEL_HINTS.search(self.context.text):
            problem = None
        if holder is not None and problem is not None and any(arg.star == "**" for arg in holder.args):
            problem = None  # **kwargs may carry problem_type: a second one is a TypeError; marked instead
        if holder is not None and problem is not None:
            if id(holder) in self._problem_type_set:
                return
            self._problem_type_set.add(id(holder))
            value = cst.SimpleString(f'"{problem}"')
            why = ("num_labels=1 always means regression" if problem == REGRESSION else
                   'use "regression" if num_labels can be 1, "multi_label_classification" for multi-hot float labels')
            self.replace(holder, lambda updated: add_keyword_keep_layout(cast(cst.Call, updated), "problem_type", value),
                         f'problem_type="{problem}" set where num_labels is given: transformers would set it in the '
                         f"first forward and the compiled graph would recompile ({why})", code="NRN853")
            return
        self.mark(call, 'set config.problem_type (e.g. "single_label_classification"): the first forward sets it '
                  "and the compiled graph recompiles once", code="NRN852")

    def _labels_holder(self, call: cst.Call, pretrained: bool) -> cst.Call | None:
        """The call that carries ``num_labels`` for this model: the model's own ``from_pretrained``,
        or the config it is built from (an inline config call or a name assigned once in this scope)."""
        if pretrained and _num_labels_given(call):
            return call
        arg = keyword(call, "config") or (None if pretrained else positional(call, 0))
        if arg is None:
            return None
        value: cst.BaseExpression | None = arg.value
        if isinstance(value, cst.Name):
            value = self._single_assignment(value)
        if isinstance(value, cst.Call) and self._makes_config(value) and _num_labels_given(value):
            return value
        return None

    def _makes_config(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained":
            func = func.value
        return any(name.startswith("transformers.") and name.endswith("Config") for name in self.qualified(func))

    def _single_assignment(self, name: cst.Name) -> cst.BaseExpression | None:
        """The value of ``name = <value>`` when that is the only binding of the name in its scope."""
        scope = self.get_metadata(ScopeProvider, name, None)
        if scope is None or name.value not in scope:
            return None
        assignments = list(scope[name.value])
        if len(assignments) != 1:
            return None
        target = getattr(assignments[0], "node", None)
        assign_target = self.parent(target) if isinstance(target, cst.Name) else None
        assign = self.parent(assign_target) if isinstance(assign_target, cst.AssignTarget) else None
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
            return assign.value
        return None

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
