"""A torchtune-style recipe that frees the device cache once before its loop (every distributed
recipe does): torchtune picks the cache's namespace from the host, not from the recipe's device."""
import torch
from torchtune import training, utils


class LoRAFinetune:
    def __init__(self, cfg):
        self._device = utils.get_device(device=cfg.device)
        self._dtype = training.get_dtype(cfg.dtype, device=torch.device("cpu") if str(self._device).startswith("neuron") else self._device)

    def train(self, model, loader, optimizer):
        # free what setup left behind
        # porter: NRN116 torchtune's cleanup_before_training empties the cache of torch.cpu on Trainium (torchtune/training/memory.py:51-52: its device namespace knows cuda/npu/xpu only, and torch.cpu has no empty_cache): skip it where the device is neuron
        training.cleanup_before_training()
        for step, batch in enumerate(loader):
            loss = model(batch["tokens"].to(self._device)).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
