import torch


def main(cfg):
    # simulator on cuda:0, training on cuda:1 (or the simulator's GPU when there is one)
    sim_device = torch.device("cuda:0")  # the physics simulator always binds to CUDA device 0
    n_gpus = torch.cuda.device_count()
    train_device = torch.device("cuda:1") if n_gpus > 1 else sim_device
    print(f"{n_gpus} GPUs, sim on {sim_device}, training on {train_device}")
    model = build_model(cfg).to(train_device)
    return model, sim_device


def build_model(cfg):
    return torch.nn.Linear(cfg.width, cfg.width)
