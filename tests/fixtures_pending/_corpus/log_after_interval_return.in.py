import torch


class Trainer:
    def __init__(self, model, optimizer, log_every):
        self.model = model.cuda()
        self.optimizer = optimizer
        self.log_every = log_every
        self.step = 0

    def train_step(self, batch):
        should_log = self.step % self.log_every == 0
        loss = self.model(batch.cuda()).mean()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.optimizer.zero_grad()
        if not should_log:
            return
        print(f"step {self.step}: loss {loss.detach().item():.4f} grad_norm {grad_norm.item():.3f}")

    def train(self, loader):
        for batch in loader:
            self.step += 1
            self.train_step(batch)
