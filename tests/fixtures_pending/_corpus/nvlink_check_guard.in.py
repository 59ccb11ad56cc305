import torch

from mypkg.utils import check_nvlink_connectivity


def setup(fabric, model, devices):
    if torch.cuda.is_available() and devices > 1:
        check_nvlink_connectivity(fabric)
    return model.to("cuda")
