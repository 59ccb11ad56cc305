import torch
from packaging import version

_SCALER_TAKES_DEVICE = version.parse(torch.__version__).release >= (2, 3)

if _SCALER_TAKES_DEVICE:
    from torch.amp import GradScaler
else:
    from torch.cuda.amp import GradScaler


def make_scaler(device_type: str, enabled: bool) -> GradScaler:
    if _SCALER_TAKES_DEVICE:
        return GradScaler(device_type, enabled=enabled)
    return GradScaler(enabled=enabled)


class Runner:
    def __init__(self, model, opt, device, amp_dtype):
        self.model, self.opt = model, opt
        self.device_type = torch.device(device).type
        self.amp_dtype = amp_dtype
        self.scaler = make_scaler(self.device_type, amp_dtype == torch.float16)

    def step(self, batch):
        with torch.autocast(device_type=self.device_type, dtype=self.amp_dtype):
            loss = self.model(batch).mean()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        self.opt.zero_grad()
