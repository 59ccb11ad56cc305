"""A torchtune-style distributed recipe: memory stats logged on rank zero with no device guard.

The distributed recipes never run on the CPU, so they call get_memory_stats without the
single-device recipes' `device.type != "cpu"` guard.
"""
import time

import torch
from torchtune import training, utils
from torchtune.utils import get_logger

log = get_logger("INFO")


class DistributedRecipe:
    def __init__(self, cfg, rank):
        self._device = utils.get_device(device=cfg.device)
        self._dtype = training.get_dtype(cfg.dtype, device=torch.device("cpu") if str(self._device).startswith("neuron") else self._device)
        self._is_rank_zero = rank == 0
        self._log_peak_memory_stats = cfg.get("log_peak_memory_stats", False)

    def setup(self, model):
        init_start = time.perf_counter()
        self._model = model.to(device=self._device, dtype=self._dtype)
        if self._is_rank_zero:
            log.info(f"Instantiating model took {time.perf_counter() - init_start:.2f} secs")
            if self._device.type != "neuron":
                memory_stats = training.get_memory_stats(device=self._device)
                training.log_memory_stats(memory_stats)
        torch.distributed.barrier()

    def train(self, loader, optimizer, metric_logger):
        for step, batch in enumerate(loader):
            loss = self._model(batch["tokens"].to(self._device)).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if self._is_rank_zero:
                log_dict = {"loss": loss.detach()}
                if self._log_peak_memory_stats and self._device.type != "neuron":
                    log_dict.update(
                        training.get_memory_stats(device=self._device)
                    )
                metric_logger.log_dict(log_dict, step=step)
