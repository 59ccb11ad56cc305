import torch


def _check_finite(tensor, name, step):
    """Raise if the tensor holds a non-finite value."""
    # porter: NRN602 deliberate: torch.isfinite(tensor).all() decides control flow (one host sync every step); to drop it, test on the device (torch.isfinite) and read the flag every N steps
    if torch.isfinite(tensor).all():
        return
    n_bad = (~torch.isfinite(tensor)).sum().item()
    raise RuntimeError(f"{name}: {n_bad}/{tensor.numel()} non-finite values at step {step} (nan={tensor.isnan().sum().item()})")


def train(model, optimizer, loader):
    model.to("neuron")
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x.to("neuron")), y.to("neuron"))
        _check_finite(loss, "loss", step)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
