"""A torchtune-style recipe: memory stats are logged on every device but the CPU."""
import torch
from torchtune import training, utils
from torchtune.training import log_memory_stats


class FinetuneRecipe:
    def __init__(self, cfg):
        self._device = utils.get_device(device=cfg.device)
        self._dtype = training.get_dtype(cfg.dtype, device=self._device)
        self._log_peak_memory_stats = cfg.get("log_peak_memory_stats", False)

    def setup(self, cfg):
        self._model = build_model(cfg.model).to(device=self._device, dtype=self._dtype)
        if self._device.type != "cpu":
            memory_stats = training.get_memory_stats(device=self._device)
            log_memory_stats(memory_stats)

    def train(self, loader, optimizer, logger):
        for step, batch in enumerate(loader):
            loss = self._model(batch["tokens"].to(self._device)).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            log_dict = {"loss": loss.detach()}
            if self._device.type != "cpu" and self._log_peak_memory_stats:
                log_dict.update(training.get_memory_stats(device=self._device))
            logger.log_dict(log_dict, step=step)
