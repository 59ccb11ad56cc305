"""Collectors that act through a policy server: the workers hold no policy weights, everything on the CPU."""
from functools import partial

import torch
from torchrl.collectors import Collector


def build_rollout_collector(cfg, server, replay_buffer, num_workers):
    worker_device = torch.device("cpu")
    env_makers = [partial(make_worker_env, cfg, seed=cfg.env.seed + i, device=worker_device) for i in range(num_workers)]
    clients = [partial(RemotePolicy, server.client(i), out_keys=["action"]) for i in range(num_workers)]
    collector = Collector(
        env_makers,
        backend="process",
        policy=None,
        policy_factory=clients,
        frames_per_batch=cfg.collector.frames_per_batch,
        total_frames=-1,
        replay_buffer=replay_buffer,
        policy_device=worker_device,
        env_device=worker_device,
        storing_device=torch.device(cfg.collector.storing_device),
        trust_policy=True,
    )
    return collector
