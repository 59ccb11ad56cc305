import torch
from torchrl._utils import compile_with_warmup


def main(cfg, loss_module, optimizer, replay_buffer):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loss_module.to(device)
    compile_mode = None
    if cfg.compile.compile:
        compile_mode = cfg.compile.compile_mode or ("default" if cfg.compile.cudagraphs else "reduce-overhead")

    def update(sampled):
        loss = loss_module(sampled)["loss"]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    if cfg.compile.compile:
        update = compile_with_warmup(update, mode=compile_mode, warmup=1)

    for step in range(cfg.total_steps):
        sampled = replay_buffer.sample().to(device)
        update(sampled)
