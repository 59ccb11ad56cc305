import torch

from mypkg.utils import TORCH_2_4, autocast


class Trainer:
    def __init__(self, args, model):
        self.args = args
        self.device = torch.device("neuron:0")
        self.model = model.to(self.device)

    def setup(self):
        self.amp = self.args.amp not in {False, "fp32"}
        # porter: NRN206 GradScaler kept: float16 remains (it is built for the precision option `self.amp and self.args.amp != "bf16"`, whose autocast is in another file, line 15); make it bfloat16, then drop the scaler
        self.scaler = (
            torch.amp.GradScaler("neuron", enabled=self.amp and self.args.amp != "bf16")
            if TORCH_2_4
            else torch.amp.GradScaler("neuron", enabled=self.amp and self.args.amp != "bf16")
        )

    def step(self, batch, optimizer):
        with autocast(torch.bfloat16 if self.args.amp == "bf16" else self.amp, device=self.device.type):
            loss = self.model(batch.to(self.device)).sum()
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)
        self.scaler.update()
        optimizer.zero_grad()
