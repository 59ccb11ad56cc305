"""The data table behind the ``torch.cuda.*`` → ``torch.neuron.*`` rule (NRN103/NRN104).

``RENAMES``: names that exist under ``torch.neuron`` with the same meaning (facts §1.3, read from
the torch-neuronx source snapshot). ``NO_EQUIVALENT``: names with no Neuron counterpart; the code
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
)

# Under --style accelerator: torch.cuda.X -> torch.accelerator.Y (torch 2.13 names).
ACCELERATOR: dict[str, str] = {
    "is_available": "is_available",
    "device_count": "device_count",
    "current_device": "current_device_index",
    "set_device": "set_device_index",
    "synchronize": "synchronize",
    "empty_cache": "empty_cache",
    "memory_allocated": "memory_allocated",
    "max_memory_allocated": "max_memory_allocated",
    "memory_reserved": "memory_reserved",
    "max_memory_reserved": "max_memory_reserved",
    "reset_peak_memory_stats": "reset_peak_memory_stats",
    "reset_accumulated_memory_stats": "reset_accumulated_memory_stats",
    "memory_stats": "memory_stats",
    "device": "device_index",
    "Stream": "Stream",
    "Event": "Event",
    "current_stream": "current_stream",
    "set_stream": "set_stream",
}
