"""On-policy trainer shaped like torchrl's A2C/GAIL scripts: the script never syncs the collector's policy."""
import torch
from torchrl.collectors import Collector


def train(cfg, make_env, make_models, update):
    device = torch.device(cfg.device) if cfg.device else torch.device(f"{torch.accelerator.current_accelerator().type}:0" if torch.accelerator.is_available() else "cpu")
    actor, adv_module = make_models(device)
    collector = Collector(
        create_env_fn=make_env(cfg.env_name, device),
        policy=actor,
        frames_per_batch=cfg.frames_per_batch,
        total_frames=cfg.total_frames,
        device="cpu" if str(device).startswith("neuron") else device,
        trust_policy=True,
    )
    for i, data in enumerate(collector):
        data = data.to(device)
        with torch.no_grad():
            data = adv_module(data)
        for minibatch in data.reshape(-1).split(cfg.mini_batch_size):
            update(minibatch)
        print(i, data["next", "reward"].mean())
        if str(device).startswith("neuron"):
            collector.update_policy_weights_()
    collector.shutdown()
