import torch
from torch.distributed.device_mesh import init_device_mesh


def build_mesh(device_name, dims, names):
    device_type = device_name
    if device_type == "gpu":
        device_type = "cuda"
    return init_device_mesh(device_type=device_type, mesh_shape=tuple(dims), mesh_dim_names=tuple(names))


def devices():
    sim_device = torch.device("cuda:0")  # the simulator always binds to CUDA device 0
    train_device = torch.device("cuda:1") if torch.cuda.device_count() > 1 else torch.device("cuda:0")
    return sim_device, train_device
