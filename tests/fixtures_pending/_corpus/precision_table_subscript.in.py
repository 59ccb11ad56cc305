import torch


def pick_dtype(precision: str, quantize: str | None):
    if quantize is not None and quantize.startswith("bnb."):
        dtype = {"16-true": torch.float16, "bf16-true": torch.bfloat16, "32-true": torch.float32}[precision]
        return dtype
    return None


def normalise_device(device) -> str:
    if isinstance(device, torch.device):
        if device.type == "cuda" and device.index is None:
            return ""
        device = str(device)
    device = str(device).lower()
    for remove in "cuda:", "none", "(", ")", "[", "]", "'", " ":
        device = device.replace(remove, "")
    if device == "cuda":
        device = "0"
    return device
