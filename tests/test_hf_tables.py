"""The HF rules' tables (NRN8xx) checked against the installed transformers / accelerate.

What the rules write must be accepted by the libraries, and what they remove must really be
gone or CUDA-only there; a library upgrade that changes either makes these tests fail.
"""

from __future__ import annotations

import dataclasses

import pytest

from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.results import Success
from porter.rules._tables.hf import (
    CUDA_DDP_BACKENDS,
    CUDA_OPTIMS,
    FUSED,
    OPTIMUM_ONLY_ARGS,
    REMOVED_SETTINGS,
    UNFUSED_OPTIMS,
    is_training_args,
)

training_args = pytest.importorskip("transformers.training_args")
TrainingArguments = training_args.TrainingArguments
FIELDS = {field.name: field for field in dataclasses.fields(TrainingArguments)}
OPTIMIZERS = {member.value for member in training_args.OptimizerNames}


def test_every_written_optim_is_a_transformers_optimizer() -> None:
    written = {FUSED} | {port.new for port in CUDA_OPTIMS.values() if port.new is not None}
    assert written <= OPTIMIZERS


def test_ported_optim_names_are_known_or_removed_names() -> None:
    # Every table key is either a current OptimizerNames value or one transformers 5 dropped.
    dropped = {"adamw_apex_fused", "adamw_hf"}
    assert set(CUDA_OPTIMS) | set(UNFUSED_OPTIMS) <= OPTIMIZERS | dropped
    assert not dropped & OPTIMIZERS


def test_removed_settings_are_gone_or_cuda_only() -> None:
    gone = {"fp16_opt_level", "fp16_backend", "half_precision_backend"}
    assert set(REMOVED_SETTINGS) == gone | {"tf32", "torch_compile_mode"}
    assert not gone & set(FIELDS), "transformers has these fields again: revisit NRN802"


def test_ddp_backend_refuses_neuron() -> None:
    choices = FIELDS["ddp_backend"].metadata["choices"]
    assert CUDA_DDP_BACKENDS <= set(choices)
    assert "neuron" not in choices  # why NRN804 removes the setting instead of renaming it


def test_optimum_only_fields_are_not_training_arguments() -> None:
    assert not OPTIMUM_ONLY_ARGS & set(FIELDS)


def test_accelerate_accepts_what_the_rules_write() -> None:
    accelerate_dataclasses = pytest.importorskip("accelerate.utils.dataclasses")
    assert "bf16" in {member.value for member in accelerate_dataclasses.PrecisionType}
    assert "NEURON" in {member.value for member in accelerate_dataclasses.DynamoBackend}


@pytest.mark.parametrize(
    "name",
    [
        "transformers.TrainingArguments",
        "transformers.training_args.TrainingArguments",
        "transformers.Seq2SeqTrainingArguments",
        "trl.SFTConfig",
        "trl.trainer.grpo_config.GRPOConfig",
        "optimum.neuron.NeuronTrainingArguments",
        "optimum.neuron.NeuronSFTConfig",
    ],
)
def test_training_args_classes(name: str) -> None:
    assert is_training_args(name)


@pytest.mark.parametrize("name", ["transformers.GPT2Config", "trl.ModelConfig", "trl.DDPOConfig", "mylib.TrainingArguments"])
def test_not_training_args_classes(name: str) -> None:
    assert not is_training_args(name)


def test_ported_arguments_construct(tmp_path: object) -> None:
    """A CUDA-style TrainingArguments call, ported, builds with the installed transformers."""
    source = (
        "import torch\n"
        "from transformers import TrainingArguments\n"
        "model = torch.nn.Linear(2, 2).cuda()\n"
        f"args = TrainingArguments(output_dir={str(tmp_path)!r}, use_cpu=True, fp16=True, tf32=False,\n"
        "                         optim='adamw_bnb_8bit', ddp_backend='nccl', torch_compile_mode='max-autotune')\n"
    ).encode()
    result = port_source(source, "train.py", Options())
    assert isinstance(result, Success)
    call = result.new.decode().split("args = ", 1)[1]
    args = eval(call, {"TrainingArguments": TrainingArguments})  # noqa: S307 - our own ported text
    assert args.bf16 and not args.fp16
    assert args.optim == FUSED
    assert args.torch_compile and args.torch_compile_backend == "neuron" and args.torch_compile_mode is None
    assert args.dataloader_drop_last and not args.logging_nan_inf_filter
    assert args.ddp_backend is None
