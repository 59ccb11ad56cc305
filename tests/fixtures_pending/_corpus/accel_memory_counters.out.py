"""Release cached blocks between rollout phases and report the peak (torchtune GRPO / litgpt shape)."""

import torch


def generate_batches(model, prompts, chunk):
    outputs = []
    for start in range(0, len(prompts), chunk):
        if torch.accelerator.is_available():
            torch.get_device_module().empty_cache()
        outputs.append(model(prompts[start : start + chunk]))
    return torch.cat(outputs)


def report(device):
    if device.type != "cpu":
        used = torch.get_device_module().max_memory_allocated() / 1e9
        print(f"Memory used: {used:.2f} GB")


def step_stats(step):
    return {"step": step, "allocated_gb": (torch.get_device_module().memory_allocated() if torch.accelerator.is_available() else 0) / 1e9}
