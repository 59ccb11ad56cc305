import argparse

import torch


def pick_device(spec):
    if spec:
        return torch.device(spec)
    return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def free_after_rollout(model, batches):
    outputs = [model(b) for b in batches]
    torch.cuda.empty_cache()
    return outputs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    n_workers = 4 if torch.cuda.device_count() else 1
    return pick_device(args.device), n_workers
