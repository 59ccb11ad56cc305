"""Test stand-in for a real torch-neuronx on a device host (used only by test_device_target.py).

It provides exactly the two functions the device target reads, with recognisable values, so the
device code path of ``porter check`` runs end to end on a CPU-only machine.
"""

import types

import torch

__version__ = "2.13.0+test-standin"
_metrics = []


def get_fallback_ops():
    return ["aten::_fused_adam_", "aten::_fused_adam_"]


def get_dynamo_metrics():
    return list(_metrics)


def _backend(gm, example_inputs):
    _metrics.append({"graph_id": len(_metrics), "graph_name": f"model_{len(_metrics)}", "graph_node_count": len(gm.graph.nodes)})
    return gm.forward


torch._dynamo.backends.registry.register_backend(compiler_fn=_backend, name="neuron")
_module = types.ModuleType("torch.neuron")
_module.get_dynamo_metrics = get_dynamo_metrics
torch.neuron = _module
