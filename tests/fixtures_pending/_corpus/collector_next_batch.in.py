"""On-policy loop that pulls batches with next(iter(collector)) (shaped like torchrl's ppo/a2c scripts)."""
import torch
from torchrl._utils import get_available_device
from torchrl.collectors import Collector
from torchrl.objectives.value import GAE


def main(cfg):
    device = torch.device(cfg.optim.device) if cfg.optim.device else get_available_device()
    actor, critic = make_models(cfg.env.name, device=device)
    advantage = GAE(gamma=cfg.loss.gamma, lmbda=cfg.loss.lmbda, value_network=critic, device=device)
    optim = make_optimizer(cfg, actor, critic)
    collector = Collector(
        create_env_fn=make_env(cfg.env.name, device),
        policy=actor,
        frames_per_batch=cfg.collector.frames_per_batch,
        total_frames=cfg.collector.total_frames,
        device=device,
        compile_policy={"mode": cfg.compile.mode} if cfg.compile.compile else False,
    )
    batches = iter(collector)
    for step in range(len(collector)):
        data = next(batches)
        with torch.no_grad():
            data = advantage(data)
        for minibatch in data.reshape(-1).split(cfg.loss.mini_batch_size):
            loss = loss_module(minibatch)
            optim.zero_grad()
            loss.backward()
            optim.step()
        collector.update_policy_weights_()
    collector.shutdown()
