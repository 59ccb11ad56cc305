import torch
from torch import nn


class RBFPolicy(nn.Module):
    def __init__(self, dim, n_basis):
        super().__init__()
        self.centers = nn.Parameter(torch.randn(n_basis, dim))
        self.lengthscales = nn.Parameter(torch.ones(dim))

    def forward(self, mean, cov):
        inv = torch.diag(1.0 / self.lengthscales).unsqueeze(0)
        b = inv @ cov @ inv + torch.eye(mean.shape[-1], dtype=mean.dtype, device=mean.device)
        return torch.linalg.solve(b, (self.centers - mean.unsqueeze(1)).mT).mT.sum(-1)


def train(cfg, device):
    # the Gaussian-process pipeline is float64 end to end
    # porter: NRN722 float64 kept: this function also makes the model's data float64 (dtype = torch.float64, line 21), and a float32 model fed float64 data fails at its first matmul; float64 is not native on Neuron: port the model and its data to float32 together, or keep this pipeline on the CPU
    policy = RBFPolicy(cfg.dim, cfg.n_basis).to(device).double()
    policy.compile(backend="neuron", dynamic=False)
    optimizer = torch.optim.SGD(policy.parameters(), lr=cfg.lr)
    dtype = torch.float64
    mean = torch.zeros(cfg.dim, device=device, dtype=dtype)
    cov = torch.eye(cfg.dim, device=device, dtype=dtype) * 1e-3
    for _ in range(cfg.steps):
        optimizer.zero_grad()
        loss = policy(mean.expand(cfg.batch, -1), cov.expand(cfg.batch, -1, -1)).pow(2).mean()
        loss.backward()
        optimizer.step()


def main(cfg):
    device = torch.device("neuron" if torch.accelerator.is_available() else "cpu")
    train(cfg, device)
