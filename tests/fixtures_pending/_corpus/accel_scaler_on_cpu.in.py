"""A trainer that always builds its scaler; the precision context lives in another module (composer shape).

Composer trains on CPU too: the scaler is built on every host and used only for float16.
"""

import torch
from torch.amp.grad_scaler import GradScaler

from .precision import Precision, get_precision_context


class Trainer:
    def __init__(self, model, optimizer, precision=Precision.FP32):
        self.model = model
        self.optimizer = optimizer
        self.precision = precision
        self.scaler = GradScaler()

    def fit(self, loader, precision=None):
        if precision is not None:
            self.precision = Precision(precision)
            self.scaler = GradScaler()
        for batch in loader:
            with get_precision_context(self.precision):
                loss = self.model(batch).mean()
            if self.precision == Precision.AMP_FP16:
                self.scaler.scale(loss).backward()
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                loss.backward()
                self.optimizer.step()
            self.optimizer.zero_grad()
