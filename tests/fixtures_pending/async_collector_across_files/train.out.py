import torch
from torchrl.collectors import AsyncCollector

from helpers import build_policy, make_buffer

device = torch.device("neuron:0" if torch.accelerator.is_available() else "cpu")
policy = build_policy(64, device)
explorer = build_policy(64, "neuron:1")
buffer = make_buffer(100_000, 256, device=device, shared=True)
# porter: NRN116 the collector runs a CPU copy of the policy (torchrl/collectors/_base.py:805-828): call collector.update_policy_weights_() after each optimizer step
collector = AsyncCollector(make_env, explorer, frames_per_batch=1000, total_frames=-1, device="cpu",
                           replay_buffer=buffer, extend_buffer=True)
