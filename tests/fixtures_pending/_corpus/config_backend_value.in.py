import torch.distributed as dist


def collector_kwargs(cfg):
    if cfg.collector.backend == "nccl":
        return {"device": "cuda:0", "storing_device": "cuda:0"}
    elif cfg.collector.backend == "gloo":
        return {"device": "cpu", "storing_device": "cpu"}
    raise NotImplementedError(cfg.collector.backend)


def init(cfg):
    dist.init_process_group(backend="nccl")
    return collector_kwargs(cfg)
