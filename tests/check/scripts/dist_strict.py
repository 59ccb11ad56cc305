"""Crafted port breaking TorchNeuron's distributed rules: --tensor-first places a tensor (starts the
runtime) before init_process_group; --cores gives each rank two NeuronCores."""
import os
import sys

import torch
import torch.distributed as dist

if "--cores" in sys.argv:
    os.environ["NEURON_RT_VISIBLE_CORES"] = "0,1"
if "--tensor-first" in sys.argv:
    warm = torch.zeros(1, device="neuron")
dist.init_process_group("neuron")  # INIT-LINE
x = torch.ones(2, device="neuron")
dist.all_reduce(x)
dist.destroy_process_group()
