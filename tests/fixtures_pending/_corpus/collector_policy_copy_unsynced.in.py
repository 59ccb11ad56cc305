"""A2C-style loop whose collector acts with the very policy it trains (no weight sync call)."""
import torch
from torchrl._utils import get_available_device
from torchrl.collectors import Collector
from torchrl.objectives.value import GAE


def train(cfg):
    device = torch.device(cfg.loss.device) if cfg.loss.device else get_available_device()
    actor, critic = build_actor_critic(cfg.env.name, device=device)
    estimator = GAE(gamma=cfg.loss.gamma, lmbda=cfg.loss.lmbda, value_network=critic, device=device)
    optimizer = build_optimizer(cfg, actor, critic)
    collector = Collector(
        create_env_fn=make_env(cfg.env.name, device),
        policy=actor,
        frames_per_batch=cfg.collector.frames_per_batch,
        total_frames=cfg.collector.total_frames,
        device=device,
        storing_device=device,
        compile_policy={"mode": cfg.compile.mode} if cfg.compile.compile else False,
    )
    stream = iter(collector)
    for it in range(len(collector)):
        batch = next(stream)
        with torch.no_grad():
            batch = estimator(batch)
        loss = a2c_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    collector.shutdown()
