"""Tiny CUDA training job driven by configs/train.yaml (the sample repository's entry point).

    bash launch.sh                      # 8 GPUs through torch.distributed.launch
    python train.py --steps 4           # one GPU
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=os.path.join(os.path.dirname(__file__), "configs", "train.yaml"))
    parser.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 4)))
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    return parser.parse_args()


def main():
    args = parse_args()
    with open(args.config) as handle:
        cfg = yaml.safe_load(handle)
    distributed = int(os.environ.get("WORLD_SIZE", 1)) > 1
    if distributed:
        torch.cuda.set_device(args.local_rank)
        dist.init_process_group(backend=cfg["dist_backend"])
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(cfg["seed"])

    device = torch.device(cfg["device"])
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 4)).cuda()
    if distributed:
        model = DDP(model, device_ids=[args.local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    use_amp = "16" in str(cfg["precision"])  # 16-mixed (Lightning spelling) turns AMP on
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)

    for step in range(args.steps):
        x = torch.randn(cfg["batch_size"], 32).to(device, non_blocking=True)
        y = torch.randint(0, 4, (cfg["batch_size"],)).to(device)
        with torch.cuda.amp.autocast(enabled=use_amp):
            loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(f"step {step} loss {loss.item():.4f}")

    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
