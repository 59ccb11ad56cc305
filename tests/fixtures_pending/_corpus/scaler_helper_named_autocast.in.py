import torch

from mypkg.utils import autocast


class Trainer:
    def __init__(self, args, model):
        self.args = args
        self.device = torch.device("cuda:0")
        self.model = model.to(self.device)

    def setup(self):
        self.amp = self.args.amp not in {False, "fp32"}
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp and self.args.amp != "bf16")

    def step(self, batch, optimizer):
        with autocast(torch.bfloat16 if self.args.amp == "bf16" else self.amp, device=self.device.type):
            loss = self.model(batch.to(self.device)).sum()
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)
        self.scaler.update()
        optimizer.zero_grad()
