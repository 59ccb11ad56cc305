"""Distributed data parallel training with torchrun, in the style of the PyTorch DDP tutorial.

    torchrun --standalone --nproc_per_node=gpu ddp_tutorial.py --epochs 2
    python ddp_tutorial.py --steps 8          # single process: world size 1

A snapshot is written every --save-every epochs; pass --snapshot-path of an existing snapshot
to resume from it (the default is a fresh directory per run).
"""
import argparse
import os
import socket
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SyntheticDataset(Dataset):
    """Fixed random features whose label depends on the sign pattern of a projection."""

    def __init__(self, size, in_features=32, num_classes=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        w = torch.randn(in_features, num_classes, generator=g)
        self.x = torch.randn(size, in_features, generator=g)
        self.y = (self.x @ w).argmax(dim=1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return self.x[index], self.y[index]


def ddp_setup():
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    init_process_group(backend="nccl")


class Trainer:
    def __init__(
        self,
        model: torch.nn.Module,
        train_data: DataLoader,
        optimizer: torch.optim.Optimizer,
        save_every: int,
        snapshot_path: str,
        log_every: int = 1,
    ) -> None:
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model.to(self.gpu_id)
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.log_every = log_every
        self.epochs_run = 0
        self.global_step = 0
        self.snapshot_path = snapshot_path
        if os.path.exists(snapshot_path):
            print("Loading snapshot")
            self._load_snapshot(snapshot_path)

        self.model = DDP(self.model, device_ids=[self.gpu_id])

    def _load_snapshot(self, snapshot_path):
        loc = f"cuda:{self.gpu_id}"
        snapshot = torch.load(snapshot_path, map_location=loc)
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.optimizer.load_state_dict(snapshot["OPTIMIZER_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
        print(f"Resuming training from snapshot at Epoch {self.epochs_run}")

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.cross_entropy(output, targets)
        loss.backward()
        self.optimizer.step()
        return loss

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.train_data))[0])
        print(f"[GPU{self.gpu_id}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(self.train_data)}")
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            source = source.to(self.gpu_id)
            targets = targets.to(self.gpu_id)
            loss = self._run_batch(source, targets)
            if self.gpu_id == 0 and self.global_step % self.log_every == 0:
                print(f"[GPU{self.gpu_id}] epoch {epoch} step {self.global_step} loss {loss.item():.4f}")
            self.global_step += 1

    def _save_snapshot(self, epoch):
        snapshot = {
            "MODEL_STATE": self.model.module.state_dict(),
            "OPTIMIZER_STATE": self.optimizer.state_dict(),
            "EPOCHS_RUN": epoch + 1,
        }
        torch.save(snapshot, self.snapshot_path)
        print(f"Epoch {epoch} | Training snapshot saved at {self.snapshot_path}")

    def train(self, max_epochs: int):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.gpu_id == 0 and epoch % self.save_every == 0:
                self._save_snapshot(epoch)


def load_train_objs(num_samples):
    train_set = SyntheticDataset(num_samples)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return train_set, model, optimizer


def prepare_dataloader(dataset: Dataset, batch_size: int):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        pin_memory=True,
        shuffle=False,
        sampler=DistributedSampler(dataset),
    )


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    # Defaults so that `python ddp_tutorial.py` runs as a single-process job (world size 1).
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))

    parser = argparse.ArgumentParser(description="simple distributed training job")
    parser.add_argument("--epochs", default=2, type=int, help="Total epochs to train the model")
    parser.add_argument("--save-every", default=1, type=int, help="How often to save a snapshot")
    parser.add_argument("--batch-size", default=32, type=int, help="Input batch size on each device")
    parser.add_argument("--steps", default=int(os.environ.get("STEPS", 8)), type=int,
                        help="optimizer steps in total (sets the dataset size)")
    parser.add_argument("--snapshot-path", default=None)
    parser.add_argument("--seed", default=0, type=int)
    args = parser.parse_args()
    if args.snapshot_path is None:
        args.snapshot_path = os.path.join(tempfile.mkdtemp(prefix="ddp_tutorial_"), "snapshot.pt")

    torch.manual_seed(args.seed)
    ddp_setup()
    world_size = int(os.environ["WORLD_SIZE"])
    steps_per_epoch = max(1, args.steps // args.epochs)
    dataset, model, optimizer = load_train_objs(steps_per_epoch * args.batch_size * world_size)
    train_data = prepare_dataloader(dataset, args.batch_size)
    trainer = Trainer(model, train_data, optimizer, args.save_every, args.snapshot_path)
    trainer.train(args.epochs)
    destroy_process_group()


if __name__ == "__main__":
    main()
