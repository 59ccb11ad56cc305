"""Crafted port: the training steps run in a thread the script starts (torchrl's async collectors
step their policy in one), a Thread subclass with its own run()."""
import threading

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 1).to("neuron")
step = torch.compile(model, backend="neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
errors = []


class Trainer(threading.Thread):
    def run(self):
        try:
            for _ in range(3):
                x = torch.randn(8, 4, device="neuron")  # THREAD-LINE
                loss = step(x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        except BaseException as error:  # a thread's exception is printed, not raised: hand it over
            errors.append(error)


trainer = Trainer()
trainer.start()
trainer.join()
if errors:
    raise errors[0]
