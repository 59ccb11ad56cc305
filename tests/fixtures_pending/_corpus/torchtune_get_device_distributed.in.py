"""A torchtune-style distributed recipe launched by torchrun: the device name comes from the config,
and torchtune's get_device checks its index against LOCAL_RANK."""
import torch
from torch.distributed import destroy_process_group, init_process_group
from torchtune import training, utils


class DistributedFinetune:
    def __init__(self, cfg):
        device_type = cfg.device
        self._device = utils.get_device(device=device_type)
        self._dtype = training.get_dtype(cfg.dtype, device=self._device)
        init_process_group(training.get_distributed_backend(device_type))
        self.world_size, self.rank = utils.get_world_size_and_rank()
        self._is_rank_zero = self.rank == 0

    def train(self, model, loader, optimizer):
        for step, batch in enumerate(loader):
            tokens = batch["tokens"].to(self._device)
            loss = model(tokens).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        destroy_process_group()
