import torch


def worker_options(cfg):
    return {
        "num_cpus": cfg.workers.num_cpus,
        # porter: NRN103 Ray "num_gpus" requests CUDA GPUs: on Trainium request the "neuron_cores" resource (resources={"neuron_cores": N}) by hand
        "num_gpus": cfg.workers.num_gpus if torch.cuda.device_count() else 0,
        "memory": cfg.workers.memory,
    }
