"""CUDA-graph step wrapper shaped like torchtitan's cudagraph.py: the guard returns the eager step unless
CUDA is there; the capture itself lives in a class of this file that the code after the guard builds."""
import logging

import torch

from . import utils

logger = logging.getLogger(__name__)


class GraphWrapper:
    def __init__(self, fn, example_inputs):
        self._fn = fn
        self._args = example_inputs
        self._graph = None
        self._stream = torch.Stream()

    def __call__(self, *args):
        if self._graph is None:
            # porter: NRN104 torch.cuda.CUDAGraph: CUDA graphs are not available on Neuron; torch.compile(backend='neuron') compiles whole graphs
            self._graph = torch.cuda.CUDAGraph()
            # porter: NRN104 torch.cuda.graph: CUDA graphs are not available on Neuron; torch.compile(backend='neuron') compiles whole graphs
            with torch.cuda.graph(self._graph, stream=self._stream):
                self._output = self._fn(*self._args)
        for static, new in zip(self._args, args):
            static.copy_(new)
        self._graph.replay()
        return self._output


def wrap_with_graph(step_fn):
    """Replay step_fn from a captured CUDA graph; eager where graphs are not supported."""
    # porter: NRN104 CUDA test kept so its branch stays off on Neuron: the code after this early return uses torch.cuda.CUDAGraph (no Neuron equivalent)
    if not (utils.device_type == "cuda" and torch.cuda.is_available() and torch.version.hip is None):
        logger.warning("CUDA graph capture is only supported on NVIDIA CUDA; running eagerly.")
        return step_fn
    wrapper = None

    def run(inputs, labels):
        nonlocal wrapper
        if wrapper is None:
            wrapper = GraphWrapper(step_fn, [inputs, labels])
        return wrapper(inputs, labels)

    return run
