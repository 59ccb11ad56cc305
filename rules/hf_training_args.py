"""NRN801-NRN810: Hugging Face ``TrainingArguments`` (and TRL/Optimum subclasses) settings for Neuron."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import drop_keyword, keyword, set_keyword_keep_layout
from porter.rules._lib.hf import MISSING, has_double_star, literal
from porter.rules._lib.nodes import with_string_value
from porter.rules._lib.tree import child_index
from porter.rules._tables.hf import (
    CUDA_DDP_BACKENDS,
    CUDA_OPTIMS,
    FUSED,
    REMOVED_SETTINGS,
    TRL_CONFIGS,
    UNFUSED_OPTIMS,
    is_training_args,
)

CallTransform = Callable[[cst.Call], cst.Call]
def _rename_keyword(old: str, new: str) -> CallTransform:
    def transform(call: cst.Call) -> cst.Call:
        args = [
            arg.with_changes(keyword=cst.Name(new)) if arg.keyword is not None and arg.keyword.value == old else arg
            for arg in call.args
        ]
        return call.with_changes(args=args)

    return transform


def _drop(name: str) -> CallTransform:
    return lambda call: drop_keyword(call, name)


def _set(name: str, value: str) -> CallTransform:
    """Set ``name=value`` (``value`` is source text), keeping the call's layout."""
    return lambda call: set_keyword_keep_layout(call, name, cst.parse_expression(value))


def _set_string(name: str, value: str) -> CallTransform:
    """Replace the string value of ``name`` keeping its quote style."""

    def transform(call: cst.Call) -> cst.Call:
        arg = keyword(call, name)
        if arg is None or not isinstance(arg.value, cst.SimpleString):
            return set_keyword_keep_layout(call, name, cst.SimpleString(f'"{value}"'))
        return set_keyword_keep_layout(call, name, with_string_value(arg.value, value))

    return transform


def _then(*steps: CallTransform) -> CallTransform:
    def transform(call: cst.Call) -> cst.Call:
        for step in steps:
            call = step(call)
        return call

    return transform


def _identity(node: cst.CSTNode) -> cst.CSTNode:
    return node


class _TrainingArgsRule(Rule):
    """Shared plumbing: find TrainingArguments-like constructor calls, edit them keyword by keyword."""

    def visit_Call(self, node: cst.Call) -> None:
        if any(is_training_args(name) for name in self.qualified(node.func)):
            self.port(node)

    def port(self, call: cst.Call) -> None:
        raise NotImplementedError

    def edit(
        self,
        call: cst.Call,
        at: cst.CSTNode,
        transform: CallTransform,
        message: str,
        code: str,
        safety: Safety | None = None,
    ) -> None:
        """Apply ``transform`` to the call; record the change at ``at`` (the keyword's own line)."""
        self.replace(at, _identity, message, code=code, safety=safety)
        self.replace(call, transform, None, code=code)  # type: ignore[arg-type]


class HfTrainingArgs(_TrainingArgsRule):
    """Port the CUDA-only settings of ``TrainingArguments`` and its subclasses.

    What it does:
        In a call of ``transformers.TrainingArguments``/``Seq2SeqTrainingArguments``, a TRL config
        that subclasses it (``SFTConfig``, ``DPOConfig``, ``GRPOConfig``, ``KTOConfig``, ...) or an
        Optimum Neuron ``NeuronTrainingArguments``/``NeuronSFTConfig`` (matched by qualified
        name, any import spelling): ``fp16=True`` -> ``bf16=True`` (``fp16_full_eval`` ->
        ``bf16_full_eval``; ``fp16=flag`` -> ``bf16=flag`` when no ``bf16`` is given);
        ``fp16_opt_level``, ``fp16_backend``, ``half_precision_backend``, ``tf32`` and
        ``torch_compile_mode`` are removed (a ``torch_compile_mode`` that was the only compile
        switch becomes ``torch_compile_backend="neuron"``, so compilation stays on);
        ``torch_compile_backend="inductor"`` (or any other) -> ``"neuron"``; CUDA-only ``optim``
        values (``adamw_bnb_8bit``, ``adamw_8bit``, ``paged_adamw_*``, ``adamw_apex_fused``,
        ``adamw_torch_xla``, bitsandbytes RMSprop) -> ``"adamw_torch_fused"``/``"rmsprop"``;
        bitsandbytes Lion/AdEMAMix-8bit and torchao low-bit values get an NRN803 marker;
        ``ddp_backend="nccl"`` is removed.

    Why:
        On Trainium, float16 needs loss scaling that TorchNeuron does not implement natively:
        bfloat16 is the reduced precision (transformers checks it with
        ``torch.neuron.is_bf16_supported()``). apex and bitsandbytes are CUDA-only; TF32 is an
        Ampere switch (``tf32=True`` raises ``--tf32 requires Ampere``); transformers 5.24 (the
        first line with the Neuron device, PR #44302) has no ``fp16_opt_level``/
        ``half_precision_backend`` at all (TypeError). Compile modes are CUDA-only (TorchNeuron
        warns and ignores them) and the ``neuron`` Dynamo backend is TorchNeuron's.
        ``ddp_backend`` accepts only nccl/gloo/mpi/xccl/hccl/cncl/mccl in transformers 5.24
        (``"neuron"`` is refused by its argument parser), while accelerate 1.15 chooses the
        ``neuron`` process group by itself under torchrun when torch-neuronx is present.

    Before:
        args = TrainingArguments(output_dir="out", fp16=True, tf32=True, optim="adamw_bnb_8bit",
                                 ddp_backend="nccl", torch_compile=True, torch_compile_mode="max-autotune")

    After:
        args = TrainingArguments(output_dir="out", bf16=True, optim="adamw_torch_fused",
                                 torch_compile=True)

    Safety:
        Review for fp16 -> bf16 (8 mantissa bits instead of 11; on a CPU-only machine
        transformers 5.24 ignored ``fp16=True`` and trained in fp32), 8-bit -> 32-bit optimizer
        states (4x the optimizer memory) and the removed ``ddp_backend``; the other edits are
        safe. Only literal values are ported; settings that come from variables, dicts or the
        command line get markers from NRN810 (in files that are being ported). Known misses:
        a subclass of TrainingArguments defined in the user's code, and arguments set after
        construction (``args.fp16 = True``).
    """

    code: ClassVar[str] = "NRN801"
    name: ClassVar[str] = "hf-training-args"
    summary: ClassVar[str] = "TrainingArguments/TRL configs: fp16 -> bf16, drop tf32/apex/compile modes, CUDA-only optim -> adamw_torch_fused"
    safety: ClassVar[Safety] = Safety.REVIEW
    # "TrainingArguments" covers Seq2Seq/Neuron variants; TRL configs are named one by one ("Config"
    # alone would send most of a library tree to the parser).
    triggers: ClassVar[tuple[str, ...]] = ("TrainingArguments", *sorted(f"{name}Config" for name in TRL_CONFIGS), "NeuronSFTConfig", "NeuronORPOConfig", "NeuronGRPOConfig")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN802": "TrainingArguments: CUDA-only setting removed (tf32, fp16_opt_level, half_precision_backend, torch_compile_mode)",
        "NRN803": "TrainingArguments: CUDA-only optim -> adamw_torch_fused (or a marker where none fits)",
        "NRN804": 'TrainingArguments: ddp_backend="nccl" removed (accelerate picks the neuron process group)',
        "NRN805": 'TrainingArguments: torch_compile_backend -> "neuron"',
    }
    order: ClassVar[int] = 80

    def port(self, call: cst.Call) -> None:
        self._half("fp16", "bf16", call)
        self._half("fp16_full_eval", "bf16_full_eval", call)
        self._removed(call)
        self._optim(call)
        self._ddp_backend(call)
        self._compile_backend(call)

    def _half(self, old: str, new: str, call: cst.Call) -> None:
        arg = keyword(call, old)
        if arg is None:
            return
        value = literal(arg.value)
        if value is False or value is None:
            return
        target = keyword(call, new)
        if value is True:
            if target is None:
                transform = _rename_keyword(old, new)
            else:
                transform = _then(_drop(old), _set(new, "True"))
            self.edit(call, arg, transform, f"{old}=True -> {new}=True (Trainium trains in bfloat16)", "NRN801")
            return
        if value is not MISSING:
            return
        if target is None:
            text = self.context.module.code_for_node(arg.value)
            self.edit(call, arg, _rename_keyword(old, new), f"{old}={text} -> {new}={text}", "NRN801")
            return
        self.mark(arg, f"{old} and {new} both come from variables: keep {old} off on Neuron (bf16 only)")

    def _removed(self, call: cst.Call) -> None:
        for name, why in REMOVED_SETTINGS.items():
            arg = keyword(call, name)
            if arg is None:
                continue
            compile_on = keyword(call, "torch_compile") or keyword(call, "torch_compile_backend")
            if name == "torch_compile_mode" and compile_on is None:
                # The mode alone switched compilation on: keep it on, with the neuron backend.
                transform = _then(_drop(name), _set("torch_compile_backend", '"neuron"'))
                message = 'torch_compile_mode removed (CUDA-only modes); torch_compile_backend="neuron" keeps compile on'
                self.edit(call, arg, transform, message, "NRN802", Safety.SAFE)
                continue
            self.edit(call, arg, _drop(name), f"{name} removed: {why}", "NRN802", Safety.SAFE)

    def _optim(self, call: cst.Call) -> None:
        arg = keyword(call, "optim")
        if arg is None:
            return
        value = literal(arg.value)
        port = CUDA_OPTIMS.get(value) if isinstance(value, str) else None
        if port is None:
            return
        if port.new is None:
            self.mark(arg, f'optim="{value}": {port.why}', code="NRN803")
            return
        safety = Safety.REVIEW if port.review else Safety.SAFE
        message = f'optim="{value}" -> "{port.new}" ({port.why})'
        self.edit(call, arg, _set_string("optim", port.new), message, "NRN803", safety)

    def _ddp_backend(self, call: cst.Call) -> None:
        arg = keyword(call, "ddp_backend")
        if arg is None or literal(arg.value) not in CUDA_DDP_BACKENDS:
            return
        message = 'ddp_backend="nccl" removed: under torchrun accelerate picks the "neuron" process group (transformers refuses "neuron" here)'
        self.edit(call, arg, _drop("ddp_backend"), message, "NRN804", Safety.REVIEW)

    def _compile_backend(self, call: cst.Call) -> None:
        arg = keyword(call, "torch_compile_backend")
        if arg is None:
            return
        value = literal(arg.value)
        if not isinstance(value, str) or value == "neuron":
            return
        message = f'torch_compile_backend="{value}" -> "neuron" (TorchNeuron\'s Dynamo backend)'
        self.edit(call, arg, _set_string("torch_compile_backend", "neuron"), message, "NRN805", Safety.SAFE)


class HfTrainingPerf(_TrainingArgsRule):
    """Give ``TrainingArguments`` the settings that keep a Trainer run static and sync-free on Neuron.

    What it does:
        In files that are being ported, in the same calls as NRN801: adds
        ``dataloader_drop_last=True`` (NRN806) and ``logging_nan_inf_filter=False`` (NRN807)
        when they are not set (an explicit opposite value is the user's: kept, with a marker
        saying what it costs); ``dataloader_drop_last`` is not added when the Trainer evaluates
        or predicts (an eval/predict setting on the call, ``eval_dataset=``, ``.evaluate()`` or
        ``.predict()`` in the file: its eval loaders read it too, and metrics would skip samples),
        a marker says so instead; ``optim="adamw_torch"`` -> ``"adamw_torch_fused"``
        (NRN808); ``torch_compile=True`` without a backend gets ``torch_compile_backend="neuron"``,
        and a call with no compile setting gets ``torch_compile=True,
        torch_compile_backend="neuron"`` (NRN809; not with ``--no-compile-insertion``, and an
        explicit ``torch_compile=False`` is kept); ``logging_steps`` below ``--log-interval``
        (default 10) is raised to it (NRN815), with a marker in the source (fewer log lines). Where the settings cannot be read from the
        call it adds an NRN810 marker instead: a call with ``**kwargs`` (a dict; nothing is
        added to it, the dict may hold the same keys), an ``optim=`` that comes from a
        variable, and an ``HfArgumentParser``/``TrlParser`` built over one of these classes
        (the values come from the command line or a config file). Padding and collators are
        the static-shape rules' (NRN7xx); TRL >= 1.16 already pads to 128 on Neuron, so
        nothing here adds padding.

    Why:
        A batch of another size is another graph: the last partial batch of every epoch
        recompiles (Trainer reads ``dataloader_drop_last`` for its train and eval loaders).
        ``logging_nan_inf_filter=True`` (the default) makes the Trainer call ``bool()`` on
        ``torch.isnan(loss)``/``torch.isinf(loss)`` every step: 2 host syncs per step (measured
        in porter's emulated check), and every logged step runs ``.item()`` on the loss and on
        the gradient norm (2 more). ``_fused_adamw_`` is a native TorchNeuron kernel while the
        unfused AdamW runs a loop of small ops. transformers picks the ``neuron`` compile
        backend itself only when ``torch_neuronx`` is importable; writing it makes the intent
        explicit and survives a wrong environment. Without compilation every op runs eagerly
        (TorchNeuron compiles op by op); NRN411 inserts ``model.compile`` in plain loops and
        leaves Trainer scripts to this rule.

    Before:
        args = TrainingArguments(output_dir="out", bf16=True, optim="adamw_torch")

    After:
        args = TrainingArguments(output_dir="out", bf16=True, optim="adamw_torch_fused", torch_compile=True,
                                 torch_compile_backend="neuron", dataloader_drop_last=True, logging_nan_inf_filter=False)

    Safety:
        Review: ``dataloader_drop_last`` drops up to ``batch_size - 1`` samples per epoch, in
        evaluation too (metrics then skip the last partial batch); with
        ``logging_nan_inf_filter=False`` NaN/inf losses are logged as they are instead of being
        replaced by the running average; fewer log lines with ``logging_steps`` raised (ratios
        below 1 are left alone). Turning compilation on adds start-up time and may hit graph
        breaks in the model (``porter check`` reports them). Fused and unfused AdamW compute
        the same update (tiny float differences). Runs only in files that are being ported (another rule
        changed them, or they already target ``neuron``), so a CPU-only Hugging Face script
        is left as it is.
    """

    code: ClassVar[str] = "NRN806"
    name: ClassVar[str] = "hf-training-perf"
    summary: ClassVar[str] = "TrainingArguments: dataloader_drop_last=True, logging_nan_inf_filter=False, fused AdamW, neuron compile backend"
    safety: ClassVar[Safety] = Safety.REVIEW
    # NRN801's classes, and the parsers _parser marks (NeuronHfArgumentParser contains HfArgumentParser).
    triggers: ClassVar[tuple[str, ...]] = (*HfTrainingArgs.triggers, "HfArgumentParser", "TrlParser")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN807": "TrainingArguments: logging_nan_inf_filter=False (2 host syncs per step otherwise)",
        "NRN808": 'TrainingArguments: optim="adamw_torch" -> "adamw_torch_fused"',
        "NRN809": 'TrainingArguments: torch_compile=True with torch_compile_backend="neuron"',
        "NRN810": "Trainer settings from a dict, a variable or the command line: review marker",
        "NRN815": "TrainingArguments: logging_steps below the log interval -> the log interval (2 host syncs per log)",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 81

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        names = self.qualified(node.func)
        # Optimum's parser is ported to HfArgumentParser by NRN841 in the same pass.
        if names & {"transformers.HfArgumentParser", "transformers.hf_argparser.HfArgumentParser", "trl.TrlParser",
                    "optimum.neuron.NeuronHfArgumentParser"}:
            self._parser(node)

    def port(self, call: cst.Call) -> None:
        star = has_double_star(call)
        self._optim(call)
        self._compile(call, star)
        if self._evaluates(call):
            if keyword(call, "dataloader_drop_last") is None:
                self.mark(call, "dataloader_drop_last=True would also drop the last eval/predict batch (metrics skip samples): "
                          "keep it off for evaluation; a short last train batch costs one more compile", code="NRN806")
        else:
            self._ensure(call, "dataloader_drop_last", True, "NRN806", star,
                         "dataloader_drop_last=True: one batch shape (a partial last batch would recompile)")
        self._ensure(call, "logging_nan_inf_filter", False, "NRN807", star,
                     "logging_nan_inf_filter=False: saves 2 host syncs per step (NaN losses are logged, not filtered)")
        self._logging_steps(call)
        if star:
            self.mark(call, "Trainer settings from a dict: on Neuron use bf16 (not fp16), optim adamw_torch_fused, "
                      "dataloader_drop_last=True, logging_nan_inf_filter=False", code="NRN810")

    def _optim(self, call: cst.Call) -> None:
        arg = keyword(call, "optim")
        if arg is None:
            return
        value = literal(arg.value)
        if value is MISSING:
            self.mark(arg, "optim comes from a variable: use adamw_torch_fused (bitsandbytes/apex optimizers are CUDA-only)",
                      code="NRN810")
            return
        if value in UNFUSED_OPTIMS:
            message = f'optim="{value}" -> "{FUSED}" (native fused AdamW kernel, same update)'
            self.edit(call, arg, _set_string("optim", FUSED), message, "NRN808", Safety.SAFE)

    def _compile(self, call: cst.Call, star: bool) -> None:
        if star or keyword(call, "torch_compile_backend") is not None:
            return  # a given backend is NRN805's
        arg = keyword(call, "torch_compile")
        if arg is None and keyword(call, "torch_compile_mode") is not None:
            return  # a mode as the only compile switch is replaced by the backend in NRN802
        if arg is None:
            if self.options.insert_compile:  # the Trainer's counterpart of NRN411's model.compile insertion
                message = 'torch_compile=True, torch_compile_backend="neuron": the Trainer compiles the model (one graph per shape)'
                transform = _then(_set("torch_compile", "True"), _set("torch_compile_backend", '"neuron"'))
                self.edit(call, call, transform, message, "NRN809")
            return
        if literal(arg.value) is True:
            message = 'torch_compile=True: torch_compile_backend="neuron" made explicit'
            self.edit(call, arg, _set("torch_compile_backend", '"neuron"'), message, "NRN809", Safety.SAFE)

    def _logging_steps(self, call: cst.Call) -> None:
        arg = keyword(call, "logging_steps")
        value = literal(arg.value) if arg is not None else MISSING
        interval = self.options.log_interval
        if arg is None or not isinstance(value, int) or isinstance(value, bool) or not 1 <= value < interval:
            return
        message = f"logging_steps={value} -> {interval}: each log runs .item() on the loss and the grad norm (2 host syncs, measured)"
        self.edit(call, arg, _set("logging_steps", str(interval)), message, "NRN815")
        self.mark(call, f"logging_steps was {value}: raised to {interval}, so the loss is logged every {interval} steps "
                  "(each log syncs the host twice); set it back if you need every step", code="NRN815")

    def _ensure(self, call: cst.Call, name: str, wanted: bool, code: str, star: bool, message: str) -> None:
        arg = keyword(call, name)
        if arg is None:
            if not star:
                self.edit(call, call, _set(name, str(wanted)), message, code)
            return
        if literal(arg.value) is (not wanted):  # the user's explicit choice: kept, and said why it costs
            self.mark(call, f"{name}={not wanted} kept (an explicit choice); on Neuron: {message}", code=code)

    def _evaluates(self, call: cst.Call) -> bool:
        """Whether the Trainer these arguments configure evaluates or predicts (its eval and test
        loaders read ``dataloader_drop_last`` too): an eval/predict setting on the call, or an
        ``eval_dataset=``/``.evaluate()``/``.predict()`` in the file."""
        for arg in call.args:
            name = arg.keyword.value if arg.keyword is not None else ""
            value = literal(arg.value)
            if name in {"do_eval", "do_predict"} and value is not False:
                return True
            if name in {"eval_strategy", "evaluation_strategy"} and value != "no":
                return True
            if name in {"eval_steps", "load_best_model_at_end", "metric_for_best_model"}:
                return True
        index = child_index(self)
        for node in index.find(self.context.module, cst.Arg, cst.Call):
            if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "eval_dataset":
                return True
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in {"evaluate", "predict"}:
                return True
        return False

    def _parser(self, call: cst.Call) -> None:
        first = call.args[0].value if call.args and call.args[0].keyword is None else None
        items = first.elements if isinstance(first, (cst.Tuple, cst.List)) else ([first] if first is not None else [])
        for element in items:
            value = element.value if isinstance(element, cst.BaseElement) else element
            if any(is_training_args(name) for name in self.qualified(value)):
                self.mark(call, "Trainer settings from the command line/config: pass --bf16 (not --fp16), "
                          "--optim adamw_torch_fused, --dataloader_drop_last, --logging_nan_inf_filter false", code="NRN810")
                return
