"""A torchtune-style distributed recipe launched by torchrun: the device name comes from the config,
and torchtune's get_device checks its index against LOCAL_RANK."""
import torch
from torch.distributed import destroy_process_group, init_process_group
from torchtune import training, utils


class DistributedFinetune:
    def __init__(self, cfg):
        device_type = cfg.device
        # porter: NRN116 torchtune's get_device rejects an unindexed neuron device under torchrun (torchtune/utils/_device.py:131-139: the index must equal LOCAL_RANK, and only cuda/npu/xpu get it filled in): pass f"neuron:{LOCAL_RANK}" where the device is neuron
        self._device = utils.get_device(device=device_type)
        self._dtype = training.get_dtype(cfg.dtype, device=torch.device("cpu") if str(self._device).startswith("neuron") else self._device)
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
