"""The data behind the legacy-XLA → native rule (NRN310–NRN319), from the AWS Neuron docs' PyTorch/XLA programming guide (archive) and TorchNeuron overview."""

from __future__ import annotations

XM = "torch_xla.core.xla_model."

# Calls that return the XLA device: -> torch.device("neuron").
DEVICE_CALLS: frozenset[str] = frozenset({XM + "xla_device", "torch_xla.device", "torch_xla.torch_xla.device"})

# Step-boundary calls: removed (TorchNeuron runs eagerly or through torch.compile).
STEP_CALLS: frozenset[str] = frozenset({XM + "mark_step", "torch_xla.sync", "torch_xla.torch_xla.sync"})

OPTIMIZER_STEP: frozenset[str] = frozenset({XM + "optimizer_step"})

LOADERS: frozenset[str] = frozenset(
    {"torch_xla.distributed.parallel_loader.MpDeviceLoader", "torch_xla.distributed.parallel_loader.ParallelLoader"}
)

# Rank queries with a torch.distributed counterpart (review: those raise before init_process_group).
DIST_CALLS: dict[str, str] = {
    XM + "xrt_world_size": "torch.distributed.get_world_size()",
    XM + "get_ordinal": "torch.distributed.get_rank()",
    "torch_xla.runtime.world_size": "torch.distributed.get_world_size()",
    "torch_xla.runtime.global_ordinal": "torch.distributed.get_rank()",
}

# Known APIs with no mechanical port: the note says what to do instead.
NOTES: dict[str, str] = {
    "torch_xla.distributed.xla_multiprocessing.spawn": "launch with torchrun --nproc_per_node=<NeuronCores> instead of xmp.spawn",
    XM + "save": "xm.save wrote from the master only; use torch.save under `if dist.get_rank() == 0`",
    XM + "master_print": "print only on rank 0 (dist.get_rank() == 0)",
    XM + "is_master_ordinal": "use int(os.environ['LOCAL_RANK']) == 0 (local) or dist.get_rank() == 0",
    XM + "get_local_ordinal": "use int(os.environ['LOCAL_RANK'])",
    XM + "reduce_gradients": "gradient all-reduce comes from DistributedDataParallel on Neuron",
    XM + "all_reduce": "use torch.distributed.all_reduce with the 'neuron' backend",
    XM + "rendezvous": "use torch.distributed.barrier()",
    XM + "mesh_reduce": "use torch.distributed.all_reduce / all_gather",
    "torch_xla.debug.metrics": "XLA metrics do not exist natively; use torch.neuron.get_dynamo_metrics()",
}
