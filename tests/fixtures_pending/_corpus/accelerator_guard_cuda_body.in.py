import torch


class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.alloc_retries = 0

    def train_batch(self, batch):
        loss = self.model(batch.cuda()).mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        if torch.cuda.is_available():
            stats = torch.cuda.memory_stats()
            self.alloc_retries = stats["num_alloc_retries"]
        return loss
