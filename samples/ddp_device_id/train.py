"""A small CNN classifier trained with DDP under torchrun, binding each rank to its GPU up front.

``init_process_group(backend="nccl", device_id=device)`` binds the process group to the rank's
GPU eagerly. bf16 autocast, a DistributedSampler, per-epoch StepLR, an all-reduced loss for
logging and a rank-0 checkpoint of ``model.module``.

    python make_data.py data
    torchrun --standalone --nproc_per_node=2 train.py --data data/digits.pt --epochs 3
"""
import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Digits(Dataset):
    """uint8 images in a .pt file, scaled to [0, 1] and normalised on access."""

    def __init__(self, path, mean=0.2, std=0.3):
        blob = torch.load(path)
        self.images = blob["images"]
        self.labels = blob["labels"]
        self.mean, self.std = mean, std

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.images[i].float().div_(255.0)
        return (x - self.mean) / self.std, self.labels[i]


class Net(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 6 * 6, 64)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.dropout1(F.max_pool2d(x, 2))
        x = torch.flatten(x, 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def reduce_mean(tensor, world_size):
    rt = tensor.detach().clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    return rt / world_size


def main():
    parser = argparse.ArgumentParser(description="DDP CNN classifier (torchrun)")
    parser.add_argument("--data", default="data/digits.pt")
    parser.add_argument("--batch-size", type=int, default=32, help="per-rank batch size")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--log-interval", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save-dir", default=None, help="checkpoint folder (default: a temp dir)")
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    device = torch.device(f"cuda:{local_rank}")
    torch.cuda.set_device(device)
    dist.init_process_group(backend="nccl", device_id=device)
    torch.manual_seed(args.seed)

    dataset = Digits(args.data)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, pin_memory=True)

    model = Net().to(device)
    model = DDP(model, device_ids=[local_rank], output_device=local_rank)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)

    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        model.train()
        for batch_idx, (data, target) in enumerate(loader):
            data = data.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                output = model(data)
                loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            if batch_idx % args.log_interval == 0:
                avg = reduce_mean(loss, world_size)
                if rank == 0:
                    print(f"Train Epoch: {epoch} [{batch_idx * len(data) * world_size}/{len(dataset)}] "
                          f"loss: {avg.item():.6f}")
        scheduler.step()

    if rank == 0:
        save_dir = args.save_dir or tempfile.mkdtemp(prefix="ddp_device_id_")
        torch.save(model.module.state_dict(), os.path.join(save_dir, "cnn.pt"))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
