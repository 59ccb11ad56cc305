"""Data-parallel training with one process per GPU started by ``mp.spawn``.

Shaped like the "getting started with DDP" tutorials: ``setup`` sets MASTER_ADDR/PORT and calls
``init_process_group("nccl", rank=..., world_size=...)``, each process pins its GPU with
``torch.cuda.set_device(rank)``, the model goes to ``rank`` and is wrapped in DDP, and at the end
of each epoch rank 0 writes a checkpoint that every rank loads back with a ``map_location``
remapping cuda:0 to its own device.

    python make_data.py data
    python train.py --data data/regression.pt --epochs 2            # all visible GPUs
    python train.py --data data/regression.pt --world-size 2
"""
import argparse
import os
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 32)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(32, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def setup(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)


def cleanup():
    dist.destroy_process_group()


def train(rank, world_size, args):
    print(f"Running DDP on rank {rank} of {world_size}.")
    setup(rank, world_size, args.port)
    torch.manual_seed(args.seed)

    blob = torch.load(args.data)
    dataset = TensorDataset(blob["inputs"], blob["targets"])
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, pin_memory=True)

    model = ToyModel().to(rank)
    ddp_model = DDP(model, device_ids=[rank])
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=args.lr, momentum=0.9)
    checkpoint_path = os.path.join(args.ckpt_dir, "model.checkpoint")

    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for inputs, targets in loader:
            inputs = inputs.cuda(rank, non_blocking=True)
            targets = targets.cuda(rank, non_blocking=True)
            optimizer.zero_grad()
            outputs = ddp_model(inputs)
            loss = loss_fn(outputs, targets)
            loss.backward()
            optimizer.step()
            if rank == 0 and step % args.log_every == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            step += 1

        # All ranks hold the same weights, so saving on one is enough; the barrier keeps the
        # others from loading before the file is written.
        if rank == 0:
            torch.save(ddp_model.state_dict(), checkpoint_path)
        dist.barrier()
        map_location = {"cuda:%d" % 0: "cuda:%d" % rank}
        ddp_model.load_state_dict(torch.load(checkpoint_path, map_location=map_location))

    if rank == 0:
        os.remove(checkpoint_path)
    cleanup()


def find_free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description="DDP with mp.spawn")
    parser.add_argument("--data", default="data/regression.pt")
    parser.add_argument("--world-size", type=int, default=None, help="processes to start (default: one per GPU)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--log-every", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ckpt-dir", default=None, help="where the per-epoch checkpoint goes (default: a temp dir)")
    args = parser.parse_args()
    args.ckpt_dir = args.ckpt_dir or tempfile.mkdtemp(prefix="ddp_spawn_")
    args.port = find_free_port()

    n_gpus = torch.cuda.device_count()
    assert n_gpus >= 1, f"Requires at least 1 GPU to run, but got {n_gpus}"
    world_size = args.world_size or n_gpus
    mp.spawn(train, args=(world_size, args), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
