"""A trainer that builds its scaler in __init__ and rebuilds it in fit(), each time as one arm of a
conditional (a closure-aware subclass for closure optimizers); the precision context lives in another
module, and float16 is the default precision on a GPU (composer shape).
"""

import torch
from torch.amp.grad_scaler import GradScaler

from .precision import Precision, get_precision_context
from .scalers import ClosureGradScaler


class Trainer:
    def __init__(self, model, optimizer, precision=None):
        self.model = model
        self.optimizer = optimizer
        self.precision = Precision(precision or "amp_fp16")
        self.scaler = ClosureGradScaler() if self._use_closures() else GradScaler()

    def _use_closures(self):
        return getattr(self.optimizer, "uses_closure", False)

    def fit(self, loader, precision=None):
        if precision is not None:
            self.precision = Precision(precision)
            self.scaler = ClosureGradScaler() if self._use_closures() else GradScaler()
        for batch in loader:
            # the precision context enters autocast for the amp_* precisions
            with get_precision_context(self.precision):
                loss = self.model(batch).mean()
            if self.precision == Precision.AMP_FP16:
                if not self.scaler.is_enabled():
                    raise RuntimeError("grad scaling is required for amp_fp16, but the scaler is not enabled")
                self.scaler.scale(loss).backward()
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                loss.backward()
                self.optimizer.step()
            self.optimizer.zero_grad()
