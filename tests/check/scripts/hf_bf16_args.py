"""transformers must take its Trainium branch under the emulated target (find_spec("torch_neuronx")):
TrainingArguments(bf16=True) picks the neuron device instead of raising "doesn't support bf16/gpu"."""
import tempfile

import torch
from transformers import TrainingArguments

args = TrainingArguments(output_dir=tempfile.mkdtemp(), bf16=True, report_to=[])
assert args.device.type == "neuron", args.device
model = torch.nn.Linear(4, 1).to(args.device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
for step in range(4):
    with torch.autocast(device_type="neuron", dtype=torch.bfloat16):
        out = model(torch.randn(2, 4, device=args.device))
    assert out.dtype == torch.bfloat16  # neuron autocast really runs bf16
    loss = out.float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
