import torch


class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.alloc_retries = 0

    def train_batch(self, batch):
        loss = self.model(batch.to("neuron")).mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        if torch.cuda.is_available():
            # porter: NRN104 torch.cuda.memory_stats keys are CUDA caching-allocator keys ("num_alloc_retries"); the Neuron allocator's keys differ: port by hand
            stats = torch.cuda.memory_stats()
            self.alloc_retries = stats["num_alloc_retries"]
        return loss
