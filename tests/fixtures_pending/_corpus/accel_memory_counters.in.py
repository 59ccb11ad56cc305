"""Release cached blocks between rollout phases and report the peak (torchtune GRPO / litgpt shape)."""

import torch


def generate_batches(model, prompts, chunk):
    outputs = []
    for start in range(0, len(prompts), chunk):
        torch.cuda.empty_cache()
        outputs.append(model(prompts[start : start + chunk]))
    return torch.cat(outputs)


def report(device):
    if device.type == "cuda":
        used = torch.cuda.max_memory_allocated() / 1e9
        print(f"Memory used: {used:.2f} GB")


def step_stats(step):
    return {"step": step, "allocated_gb": torch.cuda.memory_allocated() / 1e9}
