"""A torchtune-style single-device recipe whose activation offloading is refused off CUDA.

The recipe keeps the flag on self and hands it to its model-setup method, whose parameter
(spelled like the config key) is what reaches torchtune's get_act_offloading_ctx_manager:
OffloadActivations makes CUDA streams, so the check at __init__ must keep meaning "not CUDA".
"""
import torch
from torchtune import training, utils


class SingleDeviceRecipe:
    def __init__(self, cfg):
        self._device = utils.get_device(device=cfg.device)
        self._enable_activation_checkpointing = cfg.get("enable_activation_checkpointing", False)
        self._enable_activation_offloading = cfg.get("enable_activation_offloading", False)
        if self._enable_activation_offloading:
            if self._device.type != "cuda":
                raise RuntimeError("offloading activations is supported on CUDA devices only")
            if not self._enable_activation_checkpointing:
                raise RuntimeError("offloading activations needs activation checkpointing")

    def setup(self, cfg, model_builder):
        self._model = self._setup_model(
            model_builder,
            enable_activation_checkpointing=self._enable_activation_checkpointing,
            enable_activation_offloading=self._enable_activation_offloading,
        )

    def _setup_model(self, model_builder, enable_activation_checkpointing: bool, enable_activation_offloading: bool):
        with training.set_default_dtype(torch.bfloat16), self._device:
            model = model_builder()
        if enable_activation_checkpointing:
            training.set_activation_checkpointing(model, auto_wrap_policy={torch.nn.Linear})
        self.activations_handling_ctx = training.get_act_offloading_ctx_manager(
            model, enable_activation_offloading
        )
        return model

    def train(self, loader, optimizer):
        for step, batch in enumerate(loader):
            utils.batch_to_device(batch, self._device)
            with self.activations_handling_ctx:
                logits = self._model(batch["tokens"])
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
