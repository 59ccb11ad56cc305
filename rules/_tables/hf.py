"""Data tables behind the Hugging Face rules (NRN8xx): which classes take Trainer settings, which
setting values are CUDA-only and what replaces them, and the Optimum Neuron names that have a
Transformers/TRL counterpart. Values checked against transformers 5.24.0 (``training_args.py``,
``OptimizerNames``) and accelerate 1.15.0 as installed; TRL and Optimum Neuron from their sources
(TRL is not installed here: its names are matched by qualified name only)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# ---------------------------------------------------------------- classes that take TrainingArguments fields
# transformers.TrainingArguments / Seq2SeqTrainingArguments at any module path
# (transformers.training_args.TrainingArguments, transformers.training_args_seq2seq.Seq2Seq...).
_TRANSFORMERS_ARGS = re.compile(r"^transformers(\.[\w.]+)?\.(Seq2Seq)?TrainingArguments$")
# TRL configs that subclass TrainingArguments (SFTConfig, DPOConfig, GRPOConfig, ...). Not
# AlignPropConfig/DDPOConfig (plain dataclasses) nor ModelConfig/ScriptArguments.
TRL_CONFIGS = frozenset(
    {
        "SFT", "DPO", "GRPO", "KTO", "ORPO", "CPO", "BCO", "GKD", "Reward", "PRM", "RLOO",
        "OnlineDPO", "NashMD", "XPO", "PPO", "IterativeSFT", "Distillation",
    }
)
_TRL_ARGS = re.compile(r"^trl(\.[\w.]+)?\.(?P<name>\w+)Config$")
# Optimum Neuron's subclasses (ported to the classes above by NRN841; their fields are the same).
_OPTIMUM_ARGS = re.compile(
    r"^optimum\.neuron(\.[\w.]+)?\.(Seq2SeqNeuronTrainingArguments|NeuronTrainingArguments|Neuron(SFT|ORPO|GRPO)Config)$"
)


def is_training_args(name: str) -> bool:
    """Whether the qualified ``name`` is a class whose constructor takes TrainingArguments fields."""
    if _TRANSFORMERS_ARGS.match(name) or _OPTIMUM_ARGS.match(name):
        return True
    found = _TRL_ARGS.match(name)
    return bool(found and found.group("name") in TRL_CONFIGS)


# ---------------------------------------------------------------- TrainingArguments settings
FUSED = "adamw_torch_fused"


@dataclass(frozen=True)
class OptimPort:
    """What a CUDA-only ``optim`` value becomes: ``new`` (None: keep it and add a marker)."""

    new: str | None
    why: str
    review: bool = False


# optim values that need CUDA (bitsandbytes, apex) or another accelerator's fused kernel, and what
# replaces them. "adafactor", "sgd", "adagrad", "rmsprop", the schedule-free/GaLore/LOMO families
# are plain torch code and stay. "adamw_torch" (unfused) is a performance change: NRN808.
CUDA_OPTIMS: dict[str, OptimPort] = {
    "adamw_apex_fused": OptimPort(FUSED, "apex FusedAdam is CUDA-only"),
    "adamw_torch_npu_fused": OptimPort(FUSED, "the NPU fused AdamW is Ascend-only"),
    "adamw_torch_xla": OptimPort(FUSED, "the XLA syncfree AdamW is legacy torch-xla"),
    "adamw_hf": OptimPort(FUSED, "transformers' own AdamW was removed; torch's fused AdamW is the same update"),
    "paged_adamw_32bit": OptimPort(FUSED, "bitsandbytes paged optimizers are CUDA-only"),
    "adamw_bnb_8bit": OptimPort(FUSED, "bitsandbytes 8-bit AdamW is CUDA-only; 32-bit states need 4x the optimizer memory", True),
    "adamw_8bit": OptimPort(FUSED, "bitsandbytes 8-bit AdamW is CUDA-only; 32-bit states need 4x the optimizer memory", True),
    "paged_adamw_8bit": OptimPort(FUSED, "bitsandbytes 8-bit AdamW is CUDA-only; 32-bit states need 4x the optimizer memory", True),
    "rmsprop_bnb": OptimPort("rmsprop", "bitsandbytes RMSprop is CUDA-only"),
    "rmsprop_bnb_32bit": OptimPort("rmsprop", "bitsandbytes RMSprop is CUDA-only"),
    "rmsprop_bnb_8bit": OptimPort("rmsprop", "bitsandbytes 8-bit RMSprop is CUDA-only; 32-bit states need more memory", True),
    "adamw_torch_8bit": OptimPort(None, "torchao low-bit optimizer states are untested on Neuron: use adamw_torch_fused"),
    "adamw_torch_4bit": OptimPort(None, "torchao low-bit optimizer states are untested on Neuron: use adamw_torch_fused"),
    "lion_8bit": OptimPort(None, "Lion comes only from bitsandbytes (CUDA-only): pick a torch optimizer"),
    "lion_32bit": OptimPort(None, "Lion comes only from bitsandbytes (CUDA-only): pick a torch optimizer"),
    "paged_lion_8bit": OptimPort(None, "Lion comes only from bitsandbytes (CUDA-only): pick a torch optimizer"),
    "paged_lion_32bit": OptimPort(None, "Lion comes only from bitsandbytes (CUDA-only): pick a torch optimizer"),
    "ademamix_8bit": OptimPort(None, "AdEMAMix 8-bit is bitsandbytes (CUDA-only): use ademamix or adamw_torch_fused"),
    "paged_ademamix_8bit": OptimPort(None, "AdEMAMix 8-bit is bitsandbytes (CUDA-only): use ademamix or adamw_torch_fused"),
    "paged_ademamix_32bit": OptimPort("ademamix", "bitsandbytes paged optimizers are CUDA-only"),
}
# Unfused AdamW: same update, one fused kernel (``_fused_adamw_`` is native in TorchNeuron).
UNFUSED_OPTIMS = frozenset({"adamw_torch"})

# Settings removed outright (keyword -> why). transformers 5.24 has none of the first three
# (passing them raises TypeError); tf32=True raises ValueError without an Ampere GPU.
REMOVED_SETTINGS: dict[str, str] = {
    "fp16_opt_level": "apex AMP opt level: apex is CUDA-only (and the field is gone in transformers 5)",
    "fp16_backend": "CUDA half-precision backend choice (gone in transformers 5)",
    "half_precision_backend": "CUDA half-precision backend choice (gone in transformers 5)",
    "tf32": "TF32 is an NVIDIA Ampere switch; tf32=True raises without one",
    "torch_compile_mode": "compile modes are CUDA-only (TorchNeuron ignores them with a warning)",
}
# ddp_backend values that name a CUDA collective library ("neuron" is not an accepted choice in
# transformers 5.24; accelerate 1.15 picks "neuron" itself under torchrun).
CUDA_DDP_BACKENDS = frozenset({"nccl"})

# ---------------------------------------------------------------- from_pretrained
FLASH_ATTENTION = frozenset({"flash_attention_2", "flash_attention_3"})

# ---------------------------------------------------------------- Accelerate
CUDA_MIXED_PRECISION: dict[str, str] = {
    "fp16": "float16 needs loss scaling; Trainium trains in bfloat16",
    "fp8": "accelerate's fp8 recipes (Transformer Engine, torchao, MS-AMP) are CUDA-only",
}
ACCELERATOR_CLASSES = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})

# ---------------------------------------------------------------- Optimum Neuron -> Transformers / TRL
OPTIMUM_RENAMES: dict[str, tuple[str, str]] = {
    "NeuronTrainer": ("transformers", "Trainer"),
    "NeuronTrainingArguments": ("transformers", "TrainingArguments"),
    "Seq2SeqNeuronTrainer": ("transformers", "Seq2SeqTrainer"),
    "Seq2SeqNeuronTrainingArguments": ("transformers", "Seq2SeqTrainingArguments"),
    "NeuronHfArgumentParser": ("transformers", "HfArgumentParser"),
    "NeuronSFTTrainer": ("trl", "SFTTrainer"),
    "NeuronSFTConfig": ("trl", "SFTConfig"),
}
# NeuronTrainingArguments fields that TrainingArguments does not have (optimum-neuron
# trainers/training_args.py). "half_precision_backend" ("xla"/"amp") is dropped by NRN802.
OPTIMUM_ONLY_ARGS = frozenset(
    {
        "zero_1", "tensor_parallel_size", "pipeline_parallel_size", "pipeline_parallel_num_microbatches",
        "disable_sequence_parallel", "kv_size_multiplier", "num_local_ranks_per_step", "use_xser",
        "async_save", "fuse_qkv", "recompute_causal_mask", "skip_cache_push", "neuron_cc_optlevel",
        "neuron_cc_flags_model_type", "mp_plugin", "trn_config",
    }
)
# Values of those fields that mean "no model parallelism / nothing special": dropping them changes nothing.
OPTIMUM_NEUTRAL: dict[str, tuple[object, ...]] = {
    "zero_1": (False,),
    "tensor_parallel_size": (1,),
    "pipeline_parallel_size": (1,),
    "pipeline_parallel_num_microbatches": (-1, 1),
    "disable_sequence_parallel": (False, True),
    "kv_size_multiplier": (None,),
    "num_local_ranks_per_step": (8,),
    "use_xser": (True, False),
    "async_save": (False, True),
    "fuse_qkv": (False,),
    "recompute_causal_mask": (True, False),
    "skip_cache_push": (False, True),
    "neuron_cc_optlevel": (None, 1, 2, 3),
}
