"""Train a small CNN on synthetic 32x32 RGB images with CUDA mixed precision.

A typical single-GPU image-classification script: cudnn autotuning, torch.cuda.amp
autocast + GradScaler, gradient clipping, a tqdm progress bar, pinned-memory loaders
and a checkpoint at the end of every epoch.

    python cnn_amp.py --steps 8
"""
import argparse
import os
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


def parse_args():
    parser = argparse.ArgumentParser(description="Small CNN with AMP on synthetic data")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 8)),
                        help="stop after this many optimizer steps")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--clip-grad", type=float, default=1.0)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", default=os.path.join(tempfile.gettempdir(), "cnn_amp_ckpt"))
    return parser.parse_args()


class ConvNet(nn.Module):
    def __init__(self, num_classes=10, width=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(width, width * 2, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(width * 2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(width * 2 * 8 * 8, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def make_dataset(n, num_classes=10, seed=0):
    # Give every class its own mean colour (the same for every split) so there is something to learn.
    class_means = torch.randn(num_classes, 3, 1, 1, generator=torch.Generator().manual_seed(1234))
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, num_classes, (n,), generator=g)
    images = torch.randn(n, 3, 32, 32, generator=g) * 0.5 + class_means[labels]
    return TensorDataset(images, labels)


def train_one_epoch(model, loader, criterion, optimizer, scaler, device, epoch, args, global_step):
    model.train()
    running_loss = 0.0
    correct = 0
    total = 0
    pbar = tqdm(loader, desc=f"epoch {epoch}", leave=False)
    for i, (images, targets) in enumerate(pbar):
        images = images.cuda(non_blocking=True)
        targets = targets.cuda(non_blocking=True)

        optimizer.zero_grad()
        with torch.cuda.amp.autocast():
            outputs = model(images)
            loss = criterion(outputs, targets)

        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
        scaler.step(optimizer)
        scaler.update()

        running_loss += loss.item()
        _, pred = outputs.max(1)
        total += targets.size(0)
        correct += (pred == targets).sum().item()
        pbar.set_postfix(loss=loss.item(), acc=100.0 * correct / total)

        global_step += 1
        if global_step % 2 == 0:
            print(f"epoch {epoch} step {global_step} loss {running_loss / (i + 1):.4f} "
                  f"acc {100.0 * correct / total:.2f}")
        if global_step >= args.steps:
            break
    return global_step


@torch.no_grad()
def evaluate(model, loader, criterion, device):
    model.eval()
    total_loss = 0.0
    correct = 0
    total = 0
    for images, targets in loader:
        images = images.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        with torch.cuda.amp.autocast():
            outputs = model(images)
            loss = criterion(outputs, targets)
        total_loss += loss.item() * targets.size(0)
        pred = outputs.argmax(dim=1)
        correct += (pred == targets).sum().item()
        total += targets.size(0)
    return total_loss / total, 100.0 * correct / total


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.benchmark = True

    train_set = make_dataset(args.batch_size * args.steps, seed=args.seed)
    val_set = make_dataset(64, seed=args.seed + 1)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=64, shuffle=False,
                            num_workers=args.num_workers, pin_memory=True)

    model = ConvNet(num_classes=10)
    model.cuda()
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    scaler = torch.cuda.amp.GradScaler()

    os.makedirs(args.out_dir, exist_ok=True)
    global_step = 0
    start = time.time()
    for epoch in range(args.epochs):
        global_step = train_one_epoch(model, train_loader, criterion, optimizer, scaler,
                                      device, epoch, args, global_step)
        val_loss, val_acc = evaluate(model, val_loader, criterion, device)
        print(f"epoch {epoch} val_loss {val_loss:.4f} val_acc {val_acc:.2f} "
              f"time {time.time() - start:.1f}s")
        torch.save({
            "epoch": epoch,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scaler": scaler.state_dict(),
        }, os.path.join(args.out_dir, "checkpoint.pt"))
        if global_step >= args.steps:
            break


if __name__ == "__main__":
    main()
