import logging

import torch

from . import env

logger = logging.getLogger(__name__)


class GraphRunner:
    """Captures one CUDA graph of fn on the first call, replays it afterwards."""

    def __init__(self, fn, example):
        self.fn = fn
        self.static_in = example.clone()
        self.graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn(self.static_in)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(self.graph):
            self.static_out = fn(self.static_in)

    def __call__(self, batch):
        self.static_in.copy_(batch)
        self.graph.replay()
        return self.static_out


def graphed_step(step_fn):
    """Replay step_fn from a CUDA graph; eager where graphs are not supported."""
    if not (env.device_type == "cuda" and torch.cuda.is_available() and torch.version.hip is None):
        logger.warning("CUDA graph capture is only supported on NVIDIA CUDA; running eagerly.")
        return step_fn
    runner = None

    def run(batch):
        nonlocal runner
        if runner is None:
            runner = GraphRunner(step_fn, batch)
        return runner(batch)

    return run
