import torch


def worker_options(cfg):
    return {
        "num_cpus": cfg.workers.num_cpus,
        "num_gpus": cfg.workers.num_gpus if torch.cuda.device_count() else 0,
        "memory": cfg.workers.memory,
    }
