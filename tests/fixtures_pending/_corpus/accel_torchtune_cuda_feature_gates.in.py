"""A torchtune-style recipe that turns off or rejects its CUDA-only features on other devices.

torchtune's peak-memory stats and activation offloading are CUDA-only in the library
(get_memory_stats reads the torch.cuda/npu/xpu namespace, OffloadActivations makes CUDA streams),
so the recipe disables the one and refuses the other where the device is not CUDA.
"""
import torch
from torchtune import training, utils
from torchtune.utils import get_logger

log = get_logger("INFO")


class DistributedRecipe:
    def __init__(self, cfg):
        self._device = utils.get_device(device=cfg.device)
        self._log_peak_memory_stats = cfg.get("log_peak_memory_stats", False)
        if self._log_peak_memory_stats and self._device.type != "cuda":
            log.info("peak memory stats are collected on CUDA only: log_peak_memory_stats turned off")
            self._log_peak_memory_stats = False
        self._enable_activation_offloading = cfg.get("enable_activation_offloading", False)
        if self._enable_activation_offloading:
            if self._device.type != "cuda":
                raise RuntimeError("activation offloading needs a CUDA device")

    def setup(self, model):
        self._model = model.to(self._device)
        self.activations_handling_ctx = training.get_act_offloading_ctx_manager(
            self._model, self._enable_activation_offloading
        )

    def train(self, loader, optimizer, metric_logger):
        for step, batch in enumerate(loader):
            with self.activations_handling_ctx:
                loss = self._model(batch["tokens"].to(self._device)).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            log_dict = {"loss": loss.detach()}
            if self._log_peak_memory_stats:
                log_dict.update(training.get_memory_stats(device=self._device))
            metric_logger.log_dict(log_dict, step=step)
