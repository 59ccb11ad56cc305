import torch

DTYPES = {"bf16-true": torch.bfloat16, "16-true": torch.float16, "32-true": torch.float32}


def autocast_dtype(choice):
    if choice in (True, "true", "bfloat16"):
        return torch.bfloat16
    elif choice == "float16":
        return torch.float16
    return None


def normalize(device):
    device = str(device).lower().replace("cuda:", "")
    if device == "cuda":
        device = "0"
    return device


def load(path, precision):
    model = torch.load(path)
    return model.to(DTYPES[precision])
