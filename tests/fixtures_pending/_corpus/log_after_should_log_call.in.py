import torch

from .metrics import MetricsProcessor


class Trainer:
    def __init__(self, model, optimizer, log_freq):
        self.model = model.cuda()
        self.optimizer = optimizer
        self.metrics = MetricsProcessor(log_freq)
        self.step = 0

    def train_step(self, batch):
        should_log = self.metrics.should_log(self.step)
        loss = self.model(batch.cuda()).mean()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.optimizer.zero_grad()
        if not should_log:
            return
        self.metrics.log(self.step, loss.detach().item(), grad_norm.item())

    def eval_step(self, batch):
        with torch.no_grad():
            loss = self.model(batch.cuda()).mean()
        if not self.metrics.should_log(self.step):
            return
        self.metrics.log(self.step, loss.item(), 0.0)

    def train(self, loader):
        for batch in loader:
            self.step += 1
            self.train_step(batch)
            self.eval_step(batch)
