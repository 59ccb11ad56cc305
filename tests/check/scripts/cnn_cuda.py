"""Parity original (CUDA style): a tiny CNN (conv, batch norm, max pool), SGD with momentum."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(torch.flatten(x, 1))


torch.backends.cudnn.benchmark = True
model = Net().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
images = torch.randn(32, 3, 8, 8)
labels = torch.randint(0, 10, (32,))
for step in range(6):
    x = images[step * 4:(step + 1) * 4].cuda(non_blocking=True)
    y = labels[step * 4:(step + 1) * 4].cuda(non_blocking=True)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    print("loss", loss.item())
