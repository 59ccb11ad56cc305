"""NRN841-NRN843: Optimum Neuron training classes -> their Transformers / TRL counterparts."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst
from libcst.metadata import ScopeProvider

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import drop_keyword
from porter.rules._lib.hf import literal
from porter.rules._lib.imports import import_binding
from porter.rules._lib.nodes import dotted
from porter.rules._tables.hf import OPTIMUM_NEUTRAL, OPTIMUM_ONLY_ARGS, OPTIMUM_RENAMES

_PREFIX = "optimum.neuron."
_ARGS_CLASSES = frozenset({"NeuronTrainingArguments", "Seq2SeqNeuronTrainingArguments", "NeuronSFTConfig", "NeuronORPOConfig"})


def _api(name: str) -> str:
    """``optimum.neuron.X.from_pretrained`` -> ``optimum.neuron.X`` (up to the first class name)."""
    parts = name.split(".")
    for index, part in enumerate(parts):
        if part[:1].isupper():
            return ".".join(parts[: index + 1])
    return name


class OptimumNeuron(Rule):
    """Replace Optimum Neuron's training classes with plain Transformers / TRL ones.

    What it does:
        ``optimum.neuron.NeuronTrainer`` -> ``transformers.Trainer``,
        ``NeuronTrainingArguments`` -> ``TrainingArguments`` (``Seq2Seq`` variants likewise),
        ``NeuronHfArgumentParser`` -> ``HfArgumentParser``, ``NeuronSFTTrainer``/
        ``NeuronSFTConfig`` -> ``trl.SFTTrainer``/``SFTConfig`` (NRN841): each use is renamed
        (the new import is added, the Optimum import dropped once unused), the arguments are
        carried over. Optimum-only fields of the arguments classes (``tensor_parallel_size``,
        ``pipeline_parallel_size``, ``zero_1``, ``disable_sequence_parallel``, ``fuse_qkv``,
        ``use_xser``, ...) are removed; where one asked for model parallelism or ZeRO-1
        (``tensor_parallel_size=8``, ``zero_1=True``, or a value from a variable) the statement
        gets an NRN842 marker. Any other ``optimum.neuron`` name in use — the inference classes
        (``NeuronModelForCausalLM``...), ``NeuronAccelerator``, ``optimum.neuron.models.training``
        models, ``distributed`` helpers — gets an NRN843 marker.

    Why:
        Optimum Neuron's trainers drive the legacy XLA-based torch-neuronx (``xm``, ``neuronx_distributed``);
        on TorchNeuron (native backend, device ``neuron``) Transformers, TRL and Accelerate run
        unmodified, and Hugging Face recommends using them directly. TrainingArguments has no
        model-parallel fields: tensor/pipeline parallelism on TorchNeuron is done with
        ``torch.distributed`` (DTensor ``parallelize_module``, FSDP2), which is a design change
        porter does not guess.

    Before:
        from optimum.neuron import NeuronTrainer, NeuronTrainingArguments
        args = NeuronTrainingArguments(output_dir="out", bf16=True, tensor_parallel_size=1)
        trainer = NeuronTrainer(model=model, args=args, train_dataset=ds)

    After:
        from transformers import Trainer, TrainingArguments
        args = TrainingArguments(output_dir="out", bf16=True)
        trainer = Trainer(model=model, args=args, train_dataset=ds)

    Safety:
        Review: the Optimum trainers also compiled with ``neuron_parallel_compile``, cached NEFFs
        on the Hub and sharded checkpoints; the Transformers Trainer on TorchNeuron compiles
        with ``torch.compile(backend="neuron")`` when ``torch_compile`` is set and saves plain
        checkpoints. Dropped neutral fields (``tensor_parallel_size=1``, ``zero_1=False``...)
        change nothing. A name that the file already binds to something else keeps the full
        spelling (``transformers.Trainer``). Subclasses of the Optimum classes defined in the
        user's code are renamed at the base class only.
    """

    code: ClassVar[str] = "NRN841"
    name: ClassVar[str] = "optimum-neuron"
    summary: ClassVar[str] = "optimum.neuron NeuronTrainer/NeuronTrainingArguments/NeuronSFTTrainer -> transformers/trl classes"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("optimum.neuron", "optimum_neuron")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN842": "Optimum-only training fields (model parallelism, ZeRO-1) removed; review marker where they did something",
        "NRN843": "other optimum.neuron API (inference classes, NeuronAccelerator): review marker",
    }
    order: ClassVar[int] = 40

    def visit_Module(self, node: cst.Module) -> None:
        self._marked: set[int] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self._consider(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._consider(node)

    def visit_Call(self, node: cst.Call) -> None:
        name = self._optimum_name(node.func)
        if name is not None and name.split(".")[-1] in _ARGS_CLASSES:
            self._drop_optimum_fields(node)

    # ----------------------------------------------------------------- names
    def _optimum_name(self, node: cst.CSTNode) -> str | None:
        return self.matches_prefix(node, _PREFIX)

    def _consider(self, node: cst.Name | cst.Attribute) -> None:
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node):
            return  # only the outermost node of a dotted chain
        name = self._optimum_name(node)
        if name is None:
            return
        last = name.split(".")[-1]
        if last in OPTIMUM_RENAMES:
            self._rename(node, name, *OPTIMUM_RENAMES[last])
            return
        statement = self.statement_of(node)
        if id(statement) in self._marked:
            return
        self._marked.add(id(statement))
        self.mark(node, f"{_api(name)}: Optimum Neuron API with no TorchNeuron port; use transformers/torch directly", code="NRN843")

    def _rename(self, node: cst.Name | cst.Attribute, old: str, module: str, new: str) -> None:
        if self._bound_elsewhere(node, new, module):
            replacement = cst.parse_expression(f"{module}.{new}")
            imports = (ImportSpec(module),)
        else:
            replacement = cst.Name(new)
            imports = (ImportSpec(module, new),)
        self.replace(node, replacement, f"{old} -> {module}.{new}", imports=imports)
        first = (dotted(node) or "").split(".")[0]
        binding = import_binding(self.context.module, first)
        if binding is not None:
            self.drop_import_if_unused(ImportSpec(*binding))

    def _bound_elsewhere(self, node: cst.CSTNode, new: str, module: str) -> bool:
        """Whether ``new`` already names something in the file other than ``module.new``."""
        scope = self.get_metadata(ScopeProvider, node, None)
        if scope is None or new not in scope:
            return False
        for assignment in scope[new]:
            names = {q.name for q in scope.get_qualified_names_for(assignment.name)} if hasattr(assignment, "name") else set()
            if f"{module}.{new}" not in names:
                return True
        return False

    # ----------------------------------------------------------------- Optimum-only fields
    def _drop_optimum_fields(self, call: cst.Call) -> None:
        dropped = [arg for arg in call.args if arg.keyword is not None and arg.keyword.value in OPTIMUM_ONLY_ARGS]
        if not dropped:
            return
        active = [
            f"{arg.keyword.value}={self.context.module.code_for_node(arg.value)}"
            for arg in dropped
            if arg.keyword is not None and literal(arg.value) not in OPTIMUM_NEUTRAL.get(arg.keyword.value, ())
        ]
        names = [arg.keyword.value for arg in dropped if arg.keyword is not None]

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            for name in names:
                updated = drop_keyword(updated, name)
            return updated

        for arg in dropped:
            assert arg.keyword is not None
            self.replace(arg, lambda n: n, f"{arg.keyword.value} removed (Optimum Neuron only)", code="NRN842", safety=Safety.SAFE)
        self.replace(call, transform, None, code="NRN842")
        if active:
            self.mark(call, f"{', '.join(active)}: no TrainingArguments field; shard with torch.distributed (FSDP2/DTensor) by hand",
                      code="NRN842")
