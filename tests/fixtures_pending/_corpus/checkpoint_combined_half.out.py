import torch

from mypkg.patches import safe_load

VERSION = "1.0"


def select_device(index=0):
    return torch.device(f"neuron:{index}") if torch.accelerator.is_available() else torch.device("cpu")


def finalize_checkpoint(f, s=""):
    ckpt = safe_load(f, map_location=torch.device("cpu"))
    if ckpt.get("ema"):
        ckpt["model"] = ckpt["ema"]
    ckpt["model"].half()  # smaller release file
    for p in ckpt["model"].parameters():
        p.requires_grad = False
    for k in "optimizer", "ema", "scaler":
        ckpt[k] = None
    combined = {"version": VERSION, **ckpt}
    torch.save(combined, s or f)
    return combined


def optimizer_state_to_fp16(state_dict):
    """Shrink an optimizer state dict for a checkpoint: float32 buffers become float16."""
    for state in state_dict["state"].values():
        for k, v in state.items():
            if k not in {"step", "exp_avg", "exp_avg_sq"} and isinstance(v, torch.Tensor) and v.dtype is torch.float32:
                state[k] = v.half()
    return state_dict
