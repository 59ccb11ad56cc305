"""On-policy trainer shaped like torchrl's PPO/A2C scripts: the batch comes from next(iter(collector))."""
import torch
from torchrl._utils import get_available_device
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer


def train(cfg, make_env, make_models, update):
    device = torch.device(cfg.device) if cfg.device else get_available_device()
    actor, adv_module = make_models(device)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(cfg.frames_per_batch, device=device))
    collector = Collector(
        create_env_fn=make_env(cfg.env_name, device),
        policy=actor,
        frames_per_batch=cfg.frames_per_batch,
        total_frames=cfg.total_frames,
        device=device,
    )
    batches = iter(collector)
    for step in range(len(collector)):
        data = next(batches)
        with torch.no_grad():
            data = adv_module(data)
        buffer.extend(data.reshape(-1))
        for minibatch in buffer:
            update(minibatch)
        collector.update_policy_weights_()
    collector.shutdown()
