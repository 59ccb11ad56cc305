import warnings

import torch
from torch.amp.grad_scaler import GradScaler

from .devices import DeviceGPU
from .precision import Precision, get_precision_context
from .scalers import ClosureGradScaler


class Engine:
    def __init__(self, model, optimizer, device, precision=None, closures=False):
        self.model = model
        self.optimizer = optimizer
        self.closures = closures
        if precision is None:
            precision = Precision.AMP_FP16 if isinstance(device, DeviceGPU) else Precision.FP32
        self.precision = Precision(precision)
        # the scaler is always built; _use_grad_scaling raises when float16 needs it and it is off
        warnings.filterwarnings(action="ignore", message=".*GradScaler.*")
        # porter: NRN206 GradScaler kept: float16 remains (self.scaler is also built for the precision option `precision is not None`, whose autocast is in another file, line 26); make it bfloat16, then drop the scaler
        self.scaler = ClosureGradScaler() if self.closures else GradScaler("neuron")

    def fit(self, batches, precision=None):
        if precision is not None:
            self.precision = Precision(precision)
            # porter: NRN206 GradScaler kept: float16 remains (it is built for the precision option `precision is not None`, whose autocast is in another file, line 26); make it bfloat16, then drop the scaler
            self.scaler = ClosureGradScaler() if self.closures else GradScaler("neuron")
        for batch in batches:
            self.train_batch(batch)

    def train_batch(self, batch):
        scaling = self._use_grad_scaling()
        with get_precision_context(self.precision):
            loss = self.model(batch)
        if scaling:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            self.optimizer.step()
        self.optimizer.zero_grad()

    def eval_batch(self, batch):
        # FP8 autocast is off in evaluation; the forward runs in the activation dtype
        with torch.no_grad(), get_precision_context(self.precision, fp8_autocast_enabled=False):
            return self.model(batch)

    def _use_grad_scaling(self):
        scaling = self.precision == Precision.AMP_FP16
        if scaling and not self.scaler.is_enabled():
            raise RuntimeError(f"{self.precision} needs grad scaling, but the scaler is not enabled")
        return scaling
