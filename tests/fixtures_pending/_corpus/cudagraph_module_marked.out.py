import warnings

import torch
from tensordict.nn import CudaGraphModule


def main(cfg, loss_module, optimizer, replay_buffer):
    device = torch.device("neuron" if torch.accelerator.is_available() else "cpu")
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

    if cfg.compile.cudagraphs:
        warnings.warn("CudaGraphModule is experimental", category=UserWarning)
        # porter: NRN104 tensordict.nn.CudaGraphModule: CUDA graphs are not available on Neuron (without CUDA it passes every call through); torch.compile(backend='neuron') compiles whole graphs
        update = CudaGraphModule(update, in_keys=[], out_keys=[], warmup=5)

    for step in range(cfg.total_steps):
        sampled = replay_buffer.sample().to(device)
        update(sampled)
