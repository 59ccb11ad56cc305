"""Ported token classifier without an attention_mask: the model finds the last real token by
comparing input_ids with its pad id (3), as GPT-2 sequence-classification heads do."""
import torch
import torch.nn as nn

PAD = 3


class LastTokenClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        real = (input_ids != PAD).int()
        last = real.sum(-1) - 1
        hidden = self.embed(input_ids)
        return self.head(hidden[torch.arange(input_ids.shape[0]), last])


device = torch.device("neuron")
model = LastTokenClassifier().to(device)
model.compile(backend="neuron", dynamic=False, fullgraph=True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=True)
# 4 rows of 8 tokens; rows keep 8, 6, 4 and 2 real tokens: 12 of 32 are padding
batch = torch.full((4, 8), PAD)
for row, length in enumerate((8, 6, 4, 2)):
    batch[row, :length] = torch.randint(4, 16, (length,))
labels = torch.tensor([0, 1, 0, 1])
for step in range(3):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(batch.to(device)), labels.to(device))
    loss.backward()
    opt.step()
