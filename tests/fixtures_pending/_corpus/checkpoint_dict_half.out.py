import torch


def load_for_eval(path):
    model = torch.load(path, map_location="cpu")["model"].float()
    return model.to("neuron").eval()


def strip_checkpoint(path, out=""):
    ckpt = torch.load(path, map_location=torch.device("cpu"))
    ckpt["optimizer"] = None
    ckpt["model"].half()  # smaller file for export tools
    for p in ckpt["model"].parameters():
        p.requires_grad = False
    torch.save(ckpt, out or path)


def convert_state(state_path, out):
    state = torch.load(state_path, map_location="cpu")
    for k, v in state.items():
        if isinstance(v, torch.Tensor) and v.dtype == torch.float32:
            state[k] = v.half()
    torch.save(state, out)
