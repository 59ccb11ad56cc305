"""NRN304: DeepSpeed engines and configs get a review marker."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.nodes import string_value

# Keys only a DeepSpeed config has; a dict literal holding one is a DeepSpeed config.
_CONFIG_KEYS = frozenset(
    {"zero_optimization", "train_micro_batch_size_per_gpu", "zero_allow_untested_optimizer", "gradient_accumulation_steps_ds"}
)
_MESSAGE = (
    "DeepSpeed on TorchNeuron is undocumented (unverified); port to torch.distributed FSDP2 "
    "(fully_shard) or DDP with backend 'neuron'"
)


class DeepSpeedUsage(Rule):
    """Mark DeepSpeed entry points and configs.

    What it does:
        Adds a ``# porter: NRN304`` review marker above ``deepspeed.initialize(...)``,
        ``deepspeed.init_distributed(...)`` and dict literals that are DeepSpeed configs (they hold
        ``zero_optimization`` or ``train_micro_batch_size_per_gpu``). The code is kept.

    Why:
        The TorchNeuron docs list DDP, FSDP (1, 2, SimpleFSDP), DTensor tensor/sequence
        parallelism and pipeline parallelism over the ``neuron`` backend (AWS Neuron docs, TorchNeuron distributed guide (torch/guides/torch-distributed)); DeepSpeed
        is not mentioned (unverified whether it runs), and its engine defaults to NCCL and CUDA
        fused kernels. ZeRO stages map onto FSDP2 sharding, a restructuring porter does not do
        blindly.

    Before:
        model_engine, optimizer, _, _ = deepspeed.initialize(model=model, config=ds_config)

    After:
        # porter: NRN304 DeepSpeed on TorchNeuron is undocumented (unverified); port to ... FSDP2 ...
        model_engine, optimizer, _, _ = deepspeed.initialize(model=model, config=ds_config)

    Safety:
        Review markers only. A DeepSpeed config loaded from JSON is seen only at the
        ``initialize`` call; this rule does not read the JSON file, which the config port
        (``porter/filetypes/configs.py``) ports: its fp16 section to bf16 (NRN291), and its
        ``communication_data_type``/``grad_accum_dtype`` following that section (NRN292).
    """

    code: ClassVar[str] = "NRN304"
    name: ClassVar[str] = "deepspeed-usage"
    summary: ClassVar[str] = "deepspeed.initialize / DeepSpeed configs -> review marker"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("deepspeed.initialize", "from deepspeed", "init_distributed", "zero_optimization", "train_micro_batch_size_per_gpu")
    order: ClassVar[int] = 50

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, "deepspeed.initialize", "deepspeed.init_distributed"):
            self.mark(node, _MESSAGE)

    def visit_Dict(self, node: cst.Dict) -> None:
        keys = {string_value(element.key) for element in node.elements if isinstance(element, cst.DictElement)}
        if keys & _CONFIG_KEYS:
            self.mark(node, _MESSAGE)
