"""NRN414: a torchtune recipe with no compile switch gets torchtune's own per-layer compile on neuron."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import ClassVar

import libcst as cst

from porter.engine.astcheck import SourceFacts
from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.device import torch_ref
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.precision import imported_as
from porter.rules._lib.tree import child_index

# torchtune 0.6.1's recipe protocol (torchtune/recipe_interfaces.py:10): every recipe of recipes/ subclasses it.
RECIPE_BASES = frozenset({"torchtune.recipe_interfaces.FTRecipeInterface"})
# torchtune 0.6.1 config.instantiate (torchtune/config/_instantiate.py): builds a config's _component_.
INSTANTIATE = frozenset({"torchtune.config.instantiate", "torchtune.config._instantiate.instantiate"})
# The config node of a model: cfg_model, cfg.model, cfg_ref_model, cfg.teacher_model (torchtune's spelling).
_MODEL_CONFIG = re.compile(r"(?i)model$")
# Setup right after the build that torchtune's siblings keep before the compile (lora_finetune_distributed.py:462-465):
# choosing the trainable (adapter) parameters.
_PEFT_SETUP = "torchtune.modules.peft."
# Any spelling of compile in the class: the recipe's own switch or compile (cfg.compile, self._compile,
# cfg.get("compile"), compile_model, torch.compile): what to compile is then the recipe's choice.
_COMPILE = re.compile(r"(?i)compile")
_BACKEND_ENV = "TORCH_COMPILE_BACKEND"
_SOURCE = "torchtune/training/_compile.py:47"


class RecipeCompile(Rule):
    """Compile the model of a torchtune recipe that has no compile switch, the way its siblings do.

    What it does:
        In a class that subclasses torchtune's ``FTRecipeInterface`` (matched by qualified name) and
        spells no compile anywhere in its body (no ``cfg.compile``/``cfg.get("compile")`` read, no
        ``self._compile``, no ``training.compile_model``/``compile_loss``, no ``torch.compile``), finds
        each method that builds a model and returns it: ``model = config.instantiate(cfg_model)``
        (torchtune's ``config.instantiate`` by qualified name, its first argument a config node whose
        name ends in ``model``: ``cfg_model``, ``cfg.model``, ``cfg_ref_model``), at the top level of the
        method or inside ``with`` blocks (``with training.set_default_dtype(...), torch.device("meta"):``),
        and ``return model``. After that statement and the trainable-parameter setup right after it
        (calls of ``torchtune.modules.peft``: ``set_trainable_params``, ``get_adapter_params``), i.e.
        before activation checkpointing and FSDP sharding, as ``lora_finetune_distributed.py:460-465``
        orders them, it inserts, on a neuron device only::

            if self._device.type == "neuron":
                os.environ.setdefault("TORCH_COMPILE_BACKEND", "neuron")
                training.compile_model(model, verbose=self._is_rank_zero)

        (``verbose=`` only where the class sets ``self._is_rank_zero``; the test is the host's
        ``torch.accelerator`` where the class sets no ``self._device``). The loss is left eager.

    Why:
        A recipe with no compile switch (torchtune 0.6.1's ``lora_dpo_distributed.py`` reads no
        ``cfg.compile``, where ``lora_dpo_single_device.py:215,330`` and every other distributed recipe
        do) runs op by op on Trainium, which is the slow path of TorchNeuron (AWS Neuron docs, about
        torch.compile). NRN411 cannot find its model (built in ``_setup_model``, the optimizer in
        ``_setup_optimizer`` from ``self._model``). torchtune's own compile is ``compile_model``
        (``torchtune/training/_compile.py:30-57``): in place, per ``TransformerSelfAttentionLayer``
        (``m.compile(backend=...)``), so state-dict keys and the FSDP2 sharding by layer stay as they
        are; its backend is ``TORCH_COMPILE_BACKEND`` (default Inductor, which TorchNeuron does not use),
        set to ``neuron`` as NRN116 sets it for the recipes that compile. The siblings compile the model
        before ``set_activation_checkpointing`` and ``shard_model`` (``lora_finetune_distributed.py:464``,
        ``full_dpo_distributed.py:441``); the DPO siblings compile no loss that their step runs
        (``lora_dpo_single_device.py`` compiles the model only; ``full_dpo_distributed.py:307`` drops
        ``compile_loss``'s return value, which for a ``DPOLoss`` is the only compiled object), hence
        the model only. The neuron test keeps the CUDA and CPU programs what they were (eager).

    Before:
        class LoRADPORecipe(FTRecipeInterface):
            def _setup_model(self, cfg_model, base_model_state_dict):
                with training.set_default_dtype(self._dtype), torch.device("meta"):
                    model = config.instantiate(cfg_model)
                set_trainable_params(model, get_adapter_params(model))
                training.shard_model(model=model, shard_conditions=[])
                return model

    After:
        class LoRADPORecipe(FTRecipeInterface):
            def _setup_model(self, cfg_model, base_model_state_dict):
                with training.set_default_dtype(self._dtype), torch.device("meta"):
                    model = config.instantiate(cfg_model)
                set_trainable_params(model, get_adapter_params(model))
                if self._device.type == "neuron":
                    os.environ.setdefault("TORCH_COMPILE_BACKEND", "neuron")
                    training.compile_model(model, verbose=self._is_rank_zero)
                training.shard_model(model=model, shard_conditions=[])
                return model

    Safety:
        Review: compiling adds start-up time and the recipe's own code may break graphs or
        recompile (``porter check`` reports both). Name heuristic: the model is what a method
        builds from a config node named ``*model`` and returns (torchtune's convention; a model built
        under an ``if`` or by another callee is missed). The class is skipped when ``compile``
        appears in any identifier or string of it (conservative: a switch spelled otherwise, e.g.
        ``cfg.jit``, is not seen). ``compile_model`` compiles only torchtune's transformer layers
        (a model of other classes compiles nothing, which the check reports). Never with
        ``--no-compile-insertion``.
    """

    code: ClassVar[str] = "NRN414"
    name: ClassVar[str] = "recipe-compile"
    summary: ClassVar[str] = ("torchtune recipe with no compile switch: training.compile_model(model) on neuron "
                              "(TORCH_COMPILE_BACKEND=neuron), before sharding as its siblings do")
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("FTRecipeInterface",)
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 66

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """Every edit is made from ``visit_ClassDef`` on a class with a base whose qualified name is
        in RECIPE_BASES, whose last part is then an identifier of the file."""
        return any(facts.spells(name.rsplit(".", 1)[1]) for name in RECIPE_BASES)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not self.options.insert_compile:
            return
        if not any(self._recipe_base(base.value) for base in node.bases):
            return
        if self._spells_compile(node):
            return
        methods = [s for s in node.body.body if isinstance(s, cst.FunctionDef)]
        attributes = {dotted(t.target) for t in child_index(self).find(node, cst.AssignTarget) if isinstance(t, cst.AssignTarget)}
        for method in methods:
            for name, anchor in self._model_builds(method):
                self._insert(method, name, anchor, "self._device" in attributes, "self._is_rank_zero" in attributes)

    def _recipe_base(self, base: cst.BaseExpression) -> bool:
        """Every binding the base may resolve to is torchtune's protocol (a local class of that name is not)."""
        names = self.qualified(base)
        return bool(names) and names <= RECIPE_BASES

    def _spells_compile(self, node: cst.ClassDef) -> bool:
        for child in child_index(self).walk(node):
            if isinstance(child, cst.Name) and _COMPILE.search(child.value):
                return True
            if isinstance(child, cst.SimpleString) and _COMPILE.search(string_value(child) or ""):
                return True
        return False

    def _model_builds(self, method: cst.FunctionDef) -> Iterator[tuple[str, cst.BaseStatement]]:
        """(model name, the method's top-level statement after which it is compiled)."""
        if not isinstance(method.body, cst.IndentedBlock):
            return
        body = list(method.body.body)
        returned = {
            r.value.value for r in child_index(self).find(method, cst.Return)
            if isinstance(r, cst.Return) and isinstance(r.value, cst.Name)
        }
        for index, statement in enumerate(body):
            for assign in self._builds_in(statement):
                target = assign.targets[0].target
                assert isinstance(target, cst.Name)
                if target.value not in returned:
                    continue
                end = index
                while end + 1 < len(body) and self._peft_setup(body[end + 1]):
                    end += 1
                yield target.value, body[end]

    def _builds_in(self, statement: cst.BaseStatement) -> Iterator[cst.Assign]:
        """``X = config.instantiate(cfg_model)`` lines of ``statement`` itself or of its ``with`` blocks."""
        if isinstance(statement, cst.With):
            if isinstance(statement.body, cst.IndentedBlock):
                for inner in statement.body.body:
                    yield from self._builds_in(inner)
            return
        if not isinstance(statement, cst.SimpleStatementLine):
            return
        for small in statement.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)):
                continue
            value = small.value
            if not (isinstance(value, cst.Call) and value.args and self.matches(value.func, *INSTANTIATE)):
                continue
            config_node = dotted(value.args[0].value)
            if value.args[0].keyword is None and config_node is not None and _MODEL_CONFIG.search(config_node):
                yield small

    def _peft_setup(self, statement: cst.BaseStatement) -> bool:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        calls = [c for c in child_index(self).find(statement, cst.Call) if isinstance(c, cst.Call)]
        return bool(calls) and all(self.matches_prefix(c.func, _PEFT_SETUP) for c in calls)

    def _insert(self, method: cst.FunctionDef, model: str, anchor: cst.BaseStatement, has_device: bool, rank_zero: bool) -> None:
        module = self.context.module
        imports: list[ImportSpec] = [ImportSpec("os")]
        training = imported_as(module, "torchtune", "training") or imported_as(module, "torchtune.training", None)
        if training is None and imported_as(module, "torchtune", None) == "torchtune":
            training = "torchtune.training"
        if training is None:
            training = "training"
            imports.append(ImportSpec("torchtune", "training"))
        if has_device:
            test = 'self._device.type == "neuron"'
        else:
            torch, torch_imports = torch_ref(module)
            imports.extend(torch_imports)
            test = f'{torch}.accelerator.is_available() and {torch}.accelerator.current_accelerator().type == "neuron"'
        verbose = ", verbose=self._is_rank_zero" if rank_zero else ""
        new = cst.parse_statement(
            f"if {test}:\n"
            f'    os.environ.setdefault("{_BACKEND_ENV}", "neuron")\n'
            f"    {training}.compile_model({model}{verbose})\n"
        )
        self.insert_after(
            anchor,
            [new],
            f"torchtune recipe with no compile switch: {model} compiled per layer on neuron with torchtune's "
            f"compile_model ({_SOURCE}), backend neuron, before sharding as its sibling recipes do "
            f"(in {method.name.value})",
            imports=imports,
        )
