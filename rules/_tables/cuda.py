"""The data table behind the ``torch.cuda.*`` → ``torch.neuron.*`` rule (NRN103/NRN104).

``RENAMES``: names that exist under ``torch.neuron`` with the same meaning; each has an entry, with
its signature and source, in ``rules/_tables/neuron_api.py`` (where a signature differs, cuda-namespace
fixes the arguments: ``ARGUMENT_FIXES`` there). ``NO_EQUIVALENT``: names with no Neuron counterpart; the code
is kept and marked for review with the note given. ``OWNED_ELSEWHERE``: prefixes other rules port
(mixed precision, exceptions, legacy tensor types); this table leaves them alone.
"""

from __future__ import annotations

RENAMES: frozenset[str] = frozenset(
    {
        "is_available",
        "device_count",
        "current_device",
        "set_device",
        "device",
        "synchronize",
        "manual_seed",
        "manual_seed_all",
        "seed",
        "seed_all",
        "initial_seed",
        "get_rng_state",
        "set_rng_state",
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
        "memory_summary",
        "reset_peak_memory_stats",
        "reset_accumulated_memory_stats",
        "empty_cache",
        "get_device_properties",
        "get_device_name",
        "Stream",
        "Event",
        "stream",
        "current_stream",
        "default_stream",
        "set_stream",
        "is_bf16_supported",
        "memory_stats",
        "init",
        "is_initialized",
    }
)

NO_EQUIVALENT: dict[str, str] = {
    "mem_get_info": "torch.neuron has no mem_get_info; use torch.neuron.memory_allocated()/get_device_properties().total_memory",
    "set_per_process_memory_fraction": "no Neuron equivalent; remove, or size the batch for ~24 GiB HBM per logical NeuronCore",
    "get_device_capability": "CUDA compute capability has no Neuron meaning; branch on the device type instead",
    "CUDAGraph": "CUDA graphs are not available on Neuron; torch.compile(backend='neuron') compiles whole graphs",
    "graph": "CUDA graphs are not available on Neuron; torch.compile(backend='neuron') compiles whole graphs",
    "graphs": "CUDA graphs are not available on Neuron; torch.compile(backend='neuron') compiles whole graphs",
    "make_graphed_callables": "CUDA graphs are not available on Neuron; use torch.compile(backend='neuron')",
    "nvtx": "NVTX ranges are CUDA-only; use torch.profiler.record_function or the Neuron profiler",
    "ipc_collect": "no Neuron equivalent; remove",
    "utilization": "no Neuron equivalent; use neuron-top / neuron-monitor outside the script",
    "reset_max_memory_allocated": "no Neuron equivalent; use torch.neuron.reset_peak_memory_stats()",
    "get_rng_state_all": "torch.neuron has no get_rng_state_all; use get_rng_state() per device",
    "set_rng_state_all": "torch.neuron has no set_rng_state_all; use set_rng_state() per device",
    "get_arch_list": "CUDA architectures have no Neuron meaning",
    "jiterator": "CUDA-only runtime kernel compilation; rewrite with torch ops or an NKI kernel",
    "reset_max_memory_cached": "no Neuron equivalent; use torch.neuron.reset_peak_memory_stats()",
    "memory_snapshot": "CUDA allocator snapshots have no Neuron equivalent; use torch.neuron.memory_stats()",
    "list_gpu_processes": "no Neuron equivalent; use neuron-top / neuron-ls outside the script",
    "cudart": "the CUDA runtime library is not available on Neuron; remove",
    "current_blas_handle": "cuBLAS handles do not exist on Neuron; remove",
    "caching_allocator_alloc": "CUDA caching-allocator API; allocate tensors with device='neuron' instead",
    "caching_allocator_delete": "CUDA caching-allocator API; let tensors go out of scope instead",
    "CUDAPluggableAllocator": "custom CUDA allocators have no Neuron equivalent",
    "change_current_allocator": "custom CUDA allocators have no Neuron equivalent",
    "MemPool": "CUDA memory pools have no Neuron equivalent",
    "use_mem_pool": "CUDA memory pools have no Neuron equivalent",
    "ExternalStream": "external CUDA streams have no Neuron equivalent; use torch.neuron.Stream()",
    "can_device_access_peer": "peer access is a CUDA notion; Neuron collectives go through the 'neuron' process group",
    "comm": "torch.cuda.comm (DataParallel scatter/gather) is CUDA-only; use torch.distributed collectives with DDP",
    "nccl": "torch.cuda.nccl is CUDA-only; use torch.distributed with backend='neuron'",
    "temperature": "GPU sensors have no torch.neuron API; use neuron-monitor outside the script",
    "power_draw": "GPU sensors have no torch.neuron API; use neuron-monitor outside the script",
    "clock_rate": "GPU sensors have no torch.neuron API; use neuron-monitor outside the script",
    "set_sync_debug_mode": "CUDA sync debugging has no Neuron equivalent; porter check counts host syncs",
    "get_sync_debug_mode": "CUDA sync debugging has no Neuron equivalent; porter check counts host syncs",
    "tunable": "TunableOp (GEMM tuning) is CUDA/ROCm-only; remove",
    "get_gencode_flags": "CUDA architectures have no Neuron meaning",
}

# Deprecated CUDA names whose Neuron (and accelerator) counterpart has a different, current name.
RENAMED: dict[str, str] = {
    "memory_cached": "memory_reserved",
    "max_memory_cached": "max_memory_reserved",
}

OWNED_ELSEWHERE: tuple[str, ...] = (
    "amp",  # mixed precision rules
    "OutOfMemoryError",
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "LongTensor",
    "IntTensor",
    "ByteTensor",
    "BoolTensor",
    "ShortTensor",
    "CharTensor",
)

# Under --style accelerator: torch.cuda.X -> torch.accelerator.Y (torch 2.13 names). Not the memory
# calls: torch.accelerator's (memory_allocated, empty_cache, get_memory_info, ...) go through torch's
# DeviceAllocator, which the Neuron allocator is not registered as, and assert on Neuron
# (neuron-facts §0.1, torch_neuronx sources); they become torch.get_device_module().X (the module of
# whatever accelerator is present: torch.neuron, torch.cuda), guarded for a CPU-only host.
ACCELERATOR: dict[str, str] = {
    "is_available": "is_available",
    "device_count": "device_count",
    "current_device": "current_device_index",
    "set_device": "set_device_index",
    "synchronize": "synchronize",
    "device": "device_index",
    "current_stream": "current_stream",
    "set_stream": "set_stream",
}

# Under --style accelerator: memory calls renamed on the device module (torch.cuda's old names).
ACCELERATOR_MEMORY: dict[str, str] = {
    "empty_cache": "empty_cache",
    "memory_allocated": "memory_allocated",
    "max_memory_allocated": "max_memory_allocated",
    "memory_reserved": "memory_reserved",
    "max_memory_reserved": "max_memory_reserved",
    "reset_peak_memory_stats": "reset_peak_memory_stats",
    "reset_accumulated_memory_stats": "reset_accumulated_memory_stats",
    "memory_stats": "memory_stats",
    "memory_cached": "memory_reserved",
    "max_memory_cached": "max_memory_reserved",
}

# Under --style accelerator: torch.cuda.X -> a device-generic torch.X (torch 2.13 names).
# ``torch.manual_seed``/``torch.seed`` also (re)seed the CPU generator: a review change.
ACCELERATOR_TORCH: dict[str, str] = {
    "Stream": "Stream",
    "Event": "Event",
    "manual_seed": "manual_seed",
    "manual_seed_all": "manual_seed",
    "seed": "seed",
    "seed_all": "seed",
    "initial_seed": "initial_seed",
}
ACCELERATOR_TORCH_REVIEW: frozenset[str] = frozenset({"manual_seed", "manual_seed_all", "seed", "seed_all"})

# Under --style accelerator: names with a torch.accelerator counterpart only there (none left:
# torch.accelerator.get_memory_info, mem_get_info's counterpart, is a memory call, see above).
ACCELERATOR_ONLY: dict[str, str] = {}

# Other libraries' CUDA-graph wrappers (NRN104 marker): qualified name -> what it does without CUDA
# (the marker says it) and, after the "; ", its source.
# tensordict/nn/cudagraphs.py: CudaGraphModule checks torch.cuda.is_available() at construction;
# without CUDA every call passes through to the wrapped function ("calls to this instance will just
# pass through it"), so it runs but gains nothing. torchtitan/distributed/cudagraph.py:335:
# wrap_with_cuda_graph returns the step unchanged unless `utils.device_type == "cuda" and
# torch.cuda.is_available()` (an eager fallback with a warning).
_PASSES_THROUGH = "without CUDA it passes every call through"
_TITAN_EAGER = "its own guard runs the step eagerly without CUDA"
CUDA_GRAPH_WRAPPERS: dict[str, str] = {
    "tensordict.nn.CudaGraphModule": f"{_PASSES_THROUGH}; tensordict/nn/__init__.py (re-export)",
    "tensordict.nn.cudagraphs.CudaGraphModule": f"{_PASSES_THROUGH}; tensordict/nn/cudagraphs.py",
    "torchtitan.distributed.cudagraph.wrap_with_cuda_graph": f"{_TITAN_EAGER}; torchtitan/distributed/cudagraph.py:335",
}

# Legacy typed-tensor classes: torch.cuda.<Name> -> (dtype, set_default_dtype accepts it).
TENSOR_TYPES: dict[str, str] = {
    "FloatTensor": "torch.float32",
    "DoubleTensor": "torch.float64",
    "HalfTensor": "torch.float16",
    "BFloat16Tensor": "torch.bfloat16",
    "LongTensor": "torch.int64",
    "IntTensor": "torch.int32",
    "ShortTensor": "torch.int16",
    "CharTensor": "torch.int8",
    "ByteTensor": "torch.uint8",
    "BoolTensor": "torch.bool",
}
FLOATING_TENSOR_TYPES: frozenset[str] = frozenset({"FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor"})

# The user's own torch.accelerator memory calls (torch 2.13: torch/accelerator/memory.py). They go
# through torch's DeviceAllocator, which the Neuron allocator is not registered as, and assert on
# Neuron (neuron-facts §0.1); on a CPU-only torch they raise RuntimeError ("Cannot access
# accelerator device when none is available", run here on torch 2.13 CPU). Ported in both styles to
# the same name on torch.get_device_module() (torch.neuron on Trainium, torch.cuda on a GPU: the
# call stays device-generic), or marked where torch.neuron has no counterpart.
ACCELERATOR_OWN_MEMORY: frozenset[str] = frozenset(
    {
        "empty_cache",
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
        "memory_stats",
        "reset_peak_memory_stats",
        "reset_accumulated_memory_stats",
    }
)
ACCELERATOR_OWN_MEMORY_MARKED: dict[str, str] = {
    "get_memory_info": "torch.accelerator.get_memory_info asserts on Neuron (its allocator is not torch's DeviceAllocator) and "
    "torch.neuron has no mem_get_info; use torch.get_device_module().memory_allocated() / get_device_properties().total_memory",
    "empty_host_cache": "torch.accelerator.empty_host_cache: whether Neuron registers a host allocator with torch was not verified "
    "(the torch-neuronx sources read have none); remove it, or keep it where it is known to work",
}
