"""Asynchronous collection straight into a replay buffer; the learner samples from the buffer."""
import torch
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer


def learn(cfg, actor, loss_module, optim, make_env):
    device = torch.device("neuron:0" if torch.accelerator.is_available() else "cpu")
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(cfg.buffer.size, device=device), batch_size=cfg.batch_size)
    collector = Collector(
        create_env_fn=make_env,
        policy=actor,
        frames_per_batch=cfg.collector.frames_per_batch,
        total_frames=cfg.collector.total_frames,
        device="cpu" if str(device).startswith("neuron") else device,
        storing_device="cpu" if str(device).startswith("neuron") else device,
        replay_buffer=buffer,
    )
    collector.start()
    for step in range(cfg.steps):
        batch = buffer.sample().to(device)
        loss = loss_module(batch)
        optim.zero_grad()
        loss.backward()
        optim.step()
        collector.update_policy_weights_()
    collector.async_shutdown()
