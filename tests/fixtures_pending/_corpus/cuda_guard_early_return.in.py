import logging

import torch

from .device import device_type

logger = logging.getLogger(__name__)


def wrap_with_graph(step_fn):
    """Replay step_fn from a captured CUDA graph; eager where graphs are not supported."""
    if not (device_type == "cuda" and torch.cuda.is_available() and torch.version.hip is None):
        logger.warning("CUDA graph capture is only supported on NVIDIA CUDA; running eagerly.")
        return step_fn
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    static = {}

    def run(batch):
        if "out" not in static:
            static["batch"] = batch.clone()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                step_fn(static["batch"])
            torch.cuda.current_stream().wait_stream(stream)
            with torch.cuda.graph(graph):
                static["out"] = step_fn(static["batch"])
        static["batch"].copy_(batch)
        graph.replay()
        return static["out"]

    return run
