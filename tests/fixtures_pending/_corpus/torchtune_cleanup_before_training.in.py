"""A torchtune-style recipe that frees the device cache once before its loop (every distributed
recipe does): torchtune picks the cache's namespace from the host, not from the recipe's device."""
import torch
from torchtune import training, utils


class LoRAFinetune:
    def __init__(self, cfg):
        self._device = utils.get_device(device=cfg.device)
        self._dtype = training.get_dtype(cfg.dtype, device=self._device)

    def train(self, model, loader, optimizer):
        # free what setup left behind
        training.cleanup_before_training()
        for step, batch in enumerate(loader):
            loss = model(batch["tokens"].to(self._device)).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
