"""Collector factory shaped like torchrl's VLA-GRPO utils: envs on the CPU, the policy served by another process."""
from functools import partial

import torch
from torchrl.collectors import Collector


def make_collector(cfg, env_factory, client_factory, replay_buffer, num_collectors):
    env_device = torch.device("cpu")
    collector = Collector(
        [partial(env_factory, cfg, idx, device=env_device) for idx in range(num_collectors)],
        backend="process",
        policy=None,
        policy_factory=[client_factory for _ in range(num_collectors)],
        frames_per_batch=cfg.envs_per_collector,
        total_frames=-1,
        replay_buffer=replay_buffer,
        policy_device=env_device,
        env_device=env_device,
        storing_device=torch.device(cfg.storing_device),
        trust_policy=True,
    )
    return collector
