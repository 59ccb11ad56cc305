"""A trainer whose device falls back to the CPU and whose autocast names "cuda" (float16 by default)."""
import argparse

import torch
import torch.nn.functional as F


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.head(x)


def train_one_epoch(model, loader, optimizer, device, use_amp):
    model.train()
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        optimizer.zero_grad(set_to_none=True)
        # On a CPU-only host this autocast warns and disables itself: the step runs in float32.
        with torch.autocast("cuda", enabled=use_amp):
            loss = F.cross_entropy(model(images), targets)
        loss.backward()
        optimizer.step()


@torch.no_grad()
def evaluate(model, loader, device, use_amp):
    model.eval()
    outputs = []
    for images, _ in loader:
        with torch.cuda.amp.autocast(enabled=use_amp):
            logits = model(images.to(device))
        outputs.append(logits.float().cpu())
    return torch.cat(outputs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--amp", action="store_true")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Classifier().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(3)]
    train_one_epoch(model, loader, optimizer, device, args.amp)
    print(evaluate(model, loader, device, args.amp).shape)


if __name__ == "__main__":
    main()
