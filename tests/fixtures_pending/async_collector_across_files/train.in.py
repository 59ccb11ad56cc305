import torch
from torchrl.collectors import AsyncCollector

from helpers import build_policy, make_buffer

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
policy = build_policy(64, device)
explorer = build_policy(64, "cuda:1")
buffer = make_buffer(100_000, 256, device=device, shared=True)
collector = AsyncCollector(make_env, explorer, frames_per_batch=1000, total_frames=-1, device="cuda:1",
                           replay_buffer=buffer, extend_buffer=True)
