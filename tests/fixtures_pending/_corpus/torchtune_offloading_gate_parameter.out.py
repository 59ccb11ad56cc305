"""A torchtune-style single-device recipe whose activation-offloading flag reaches the library
through a parameter of its own model-setup method.

The recipe refuses offloading off CUDA in __init__ (torchtune's OffloadActivations builds CUDA
streams); the flag is handed to _setup_model by keyword, and _setup_model passes its parameter
to get_act_offloading_ctx_manager.
"""
import torch
from torchtune import config, training, utils

log = utils.get_logger("INFO")


class SingleDeviceRecipe:
    def __init__(self, cfg):
        self._device = utils.get_device(device=cfg.device)
        self._dtype = training.get_dtype(cfg.dtype, device=torch.device("cpu") if str(self._device).startswith("neuron") else self._device)
        self._enable_activation_checkpointing = cfg.get("enable_activation_checkpointing", False)
        self._enable_activation_offloading = cfg.get("enable_activation_offloading", False)
        if self._enable_activation_offloading:
            if self._device.type != "cuda":
                raise RuntimeError("activation offloading is only supported on CUDA devices")
            if not self._enable_activation_checkpointing:
                raise RuntimeError("activation offloading needs activation checkpointing")

    def setup(self, cfg):
        self._model = self._setup_model(
            cfg_model=cfg.model,
            enable_activation_checkpointing=self._enable_activation_checkpointing,
            enable_activation_offloading=self._enable_activation_offloading,
            compile_model=cfg.compile,
        )
        self._optimizer = torch.optim.SGD(self._model.parameters(), lr=cfg.lr)

    def _setup_model(self, cfg_model, enable_activation_checkpointing, enable_activation_offloading, compile_model):
        with training.set_default_dtype(self._dtype), self._device:
            model = config.instantiate(cfg_model)
        if enable_activation_checkpointing:
            training.set_activation_checkpointing(model, auto_wrap_policy={torch.nn.Linear})
        if compile_model:
            training.compile_model(model)
        self.activations_handling_ctx = training.get_act_offloading_ctx_manager(
            model, enable_activation_offloading
        )
        return model

    def train(self, loader):
        for step, batch in enumerate(loader):
            utils.batch_to_device(batch, self._device)
            with self.activations_handling_ctx:
                loss = self._model(batch["tokens"]).mean()
            loss.backward()
            self._optimizer.step()
            self._optimizer.zero_grad(set_to_none=True)
            if step % 10 == 0:
                log.info(f"step {step} loss {loss.item():.4f}")
