"""The real ``torch.neuron`` API surface, with signatures, read from torch-neuronx's source.

One entry per name porter may emit as ``torch.neuron.<name>``. Rules use it to decide whether a
``torch.cuda.X(...)`` call keeps working when renamed (``rules/cuda_namespace.py``); ``porter
check``'s emulated module (``porter/check/harness/neuron_module.py``) is checked against it by
``tests/test_neuron_api.py``, so both say the same thing about what the real module accepts.

Source read: the public repository ``parmoham-aws/test-repo-parmoham``, a pre-release (April 2026,
version 0.1.0, ``torch~=2.10``) import of torch-neuronx. ``aws-neuron/torch-neuronx`` itself is not
readable here; where the released 2.13.3/2.14.3 wheels differ, they are not seen. Each entry names
the file, the commit of the stored version read, and the function. ``torch.neuron`` is that
package's ``torch_neuronx/neuron.py`` module (``torch._register_device_module("neuron", neuron)``
in ``torch_neuronx/__init__.py``); most of its functions forward to ``torch_neuronx.<same name>``
(``torch_neuronx/__init__.py``), whose checks are recorded with the entry.

No torch import here: rules run without torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

REPO = "parmoham-aws/test-repo-parmoham"
NEURON_PY = ("torch_neuronx/neuron.py", "98154b867aa24562a3213e520d9ad7fd41032291")
INIT_PY = ("torch_neuronx/__init__.py", "67d8dc4a52b14ff2d6e5023ba8487b41271e982e")
STREAMS_PY = ("torch_neuronx/streams.py", "98154b867aa24562a3213e520d9ad7fd41032291")
MEMORY_PY = ("torch_neuronx/memory.py", "67d8dc4a52b14ff2d6e5023ba8487b41271e982e")
DEVICE_CPP = ("torch_neuronx/csrc/core/NeuronDevice.cpp", "de1a39ee26f4c65930aca5b84cb96c252aa48907")
BINDINGS_CPP = ("torch_neuronx/csrc/core/NeuronBindings.cpp", "98154b867aa24562a3213e520d9ad7fd41032291")
BACKEND_PY = ("torch_neuronx/distributed/backend.py", "98154b867aa24562a3213e520d9ad7fd41032291")

Kind = Literal["positional_or_keyword", "keyword_only", "var_keyword"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()


@dataclass(frozen=True)
class Param:
    """One parameter as the real function declares it (``Stream(**kwargs)`` is one var_keyword)."""

    name: str
    default: object = REQUIRED
    kind: Kind = "positional_or_keyword"


@dataclass(frozen=True)
class Source:
    path: str
    commit: str
    symbol: str  # the function/class the fact is read from
    repo: str = REPO


@dataclass(frozen=True)
class Entry:
    """What ``torch.neuron.<name>`` is, accepts, raises and returns (where porter depends on it)."""

    name: str
    params: tuple[Param, ...]
    sources: tuple[Source, ...]
    # argument -> what the source accepts / how it treats the rest, in words
    accepts: dict[str, str] = field(default_factory=dict)
    # (exception type, when) as the source raises it
    raises: tuple[tuple[str, str], ...] = ()
    # attributes of the returned object, where the source fixes them (None: not recorded)
    returns_attributes: tuple[str, ...] | None = None
    kind: Literal["function", "module"] = "function"
    verified: bool = True
    note: str = ""


def _src(file: tuple[str, str], symbol: str) -> Source:
    return Source(path=file[0], commit=file[1], symbol=symbol)


def _device_param(default: object = None) -> tuple[Param, ...]:
    return (Param("device", default),)


_DEVICE_INDEX = (
    "None -> current device; int; str parsed with torch.device; torch.device of type 'neuron' "
    "(index None -> current device); anything else ValueError (torch_neuronx._get_device_index)"
)
_DEVICE_VALUE_ERROR = ("ValueError", "a str/torch.device whose type is not 'neuron' (e.g. 'cuda:0'), or another type")
_MEMORY_DEVICE = "None/int/object with .index (torch.device); anything else silently means the current device"
_MEMORY = "torch_neuronx.memory functions via torch_neuronx.<name>; memory._get_device_index"


def _memory(name: str, extra: tuple[Param, ...] = (), note: str = "") -> Entry:
    return Entry(
        name=name,
        params=(*_device_param(), *extra),
        sources=(_src(NEURON_PY, f"def {name}(device=None)"), _src(MEMORY_PY, f"def {name}; _get_device_index")),
        accepts={"device": _MEMORY_DEVICE},
        note=note or _MEMORY,
    )


_ENTRIES: tuple[Entry, ...] = (
    Entry("is_available", (), (_src(NEURON_PY, "def is_available()"),),
          note="device_count() > 0; False on any exception"),
    Entry("device_count", (), (_src(NEURON_PY, "def device_count()"), _src(DEVICE_CPP, "int device_count()")),
          note="visible logical cores; after init_process_group: local_world_size"),
    Entry("current_device", (), (_src(NEURON_PY, "def current_device()"), _src(DEVICE_CPP, "int current_device()")),
          note="0 unless set; after init_process_group: the local rank"),
    Entry(
        "set_device",
        (Param("device", REQUIRED),),
        (_src(NEURON_PY, "def set_device(device)"), _src(INIT_PY, "def set_device(device: int)"),
         _src(DEVICE_CPP, "void set_device(int device)"), _src(BACKEND_PY, "_neuron_runtime_setup")),
        accepts={"device": "int, or anything with .index (torch.device; index None -> current device); "
                           "a str has no .index and reaches the int comparison"},
        raises=(
            ("TypeError", "a str ('neuron:0' < 0 in torch_neuronx.set_device)"),
            ("ValueError", "index < 0 or >= device_count() ('Invalid device id')"),
            ("ValueError", "distributed job: an index other than the local rank (C++ std::invalid_argument "
                           "'Device index X is out of range. Valid range is L to L for this process', which "
                           "pybind11 translates to ValueError)"),
        ),
    ),
    Entry(
        "device",
        (Param("device_spec", REQUIRED),),
        (_src(NEURON_PY, "def device(device_spec)"), _src(INIT_PY, "class device.__init__ / _get_device_index")),
        accepts={"device_spec": _DEVICE_INDEX},
        raises=(_DEVICE_VALUE_ERROR, ("ValueError", "entering with an index set_device rejects")),
        note="the parameter is named device_spec: torch.cuda.device(device=i) does not bind",
    ),
    Entry(
        "synchronize",
        _device_param(),
        (_src(NEURON_PY, "def synchronize(device=None)"), _src(INIT_PY, "def synchronize / _get_device_index")),
        accepts={"device": _DEVICE_INDEX},
        raises=(_DEVICE_VALUE_ERROR,),
    ),
    Entry("manual_seed", (Param("seed", REQUIRED),), (_src(NEURON_PY, "def manual_seed(seed: int)"),),
          note="seeds the current device's generator; int(seed)"),
    Entry("manual_seed_all", (Param("seed", REQUIRED),), (_src(NEURON_PY, "def manual_seed_all(seed: int)"),)),
    Entry("seed", (), (_src(NEURON_PY, "def seed()"),)),
    Entry("seed_all", (), (_src(NEURON_PY, "def seed_all()"),)),
    Entry("initial_seed", (), (_src(NEURON_PY, "def initial_seed()"),)),
    Entry(
        "get_rng_state",
        _device_param(),
        (_src(NEURON_PY, "def get_rng_state(device=None)"),),
        accepts={"device": "None, str (torch.device(str); its type is not checked), int, torch.device"},
        note="CUDA's default is device='cuda'; Neuron's None (the current device): same meaning",
    ),
    Entry(
        "set_rng_state",
        (Param("state", REQUIRED), Param("device", None)),
        (_src(NEURON_PY, "def set_rng_state(state, device=None)"),),
        accepts={"device": "as get_rng_state"},
        note="the state parameter is named state (CUDA: new_state)",
    ),
    _memory("memory_allocated"),
    _memory("max_memory_allocated"),
    _memory("memory_reserved", note="always 0 in the snapshot: the allocator keeps no cache"),
    _memory("max_memory_reserved", note="always 0 in the snapshot: the allocator keeps no cache"),
    Entry(
        "memory_stats",
        _device_param(),
        (_src(NEURON_PY, "def memory_stats(device=None)"), _src(MEMORY_PY, "def memory_stats (docstring)")),
        accepts={"device": _MEMORY_DEVICE},
        returns_attributes=("allocated_bytes", "reserved_bytes", "active_bytes", "num_alloc_retries", "num_ooms",
                            "num_tensor_frees", "allocation_requests"),
        note="dict keys (not attributes); the three *_bytes values are dicts {current, peak, allocated, freed}. "
             "CUDA's flat 'allocated_bytes.all.current' keys do not exist. Keys read from the docstring of "
             "memory.memory_stats, the C++ _get_memory_stats was not read",
    ),
    _memory("memory_summary", extra=(Param("abbreviated", False),)),
    _memory("reset_peak_memory_stats"),
    _memory("reset_accumulated_memory_stats"),
    Entry("empty_cache", (), (_src(NEURON_PY, "def empty_cache()"), _src(INIT_PY, "def empty_cache()"))),
    Entry(
        "get_device_properties",
        _device_param(),
        (_src(NEURON_PY, "def get_device_properties(device=None)"), _src(INIT_PY, "def get_device_properties(device)"),
         _src(BINDINGS_CPP, "py::class_<NeuronDeviceProperties> / neuron_getDeviceProperties")),
        accepts={"device": "None -> current device; else str(device): a string containing 'neuron' is parsed "
                           "(index None -> 0), anything else goes through int()"},
        raises=(("ValueError", "str(device) neither a neuron device nor an int ('cuda:0', torch.device('cuda'))"),
                ("ValueError", "index < 0 or >= device_count() ('Invalid device id')")),
        returns_attributes=("name", "total_memory"),
        note="name is the instance type (at::neuron::utils::GetInstanceType(), e.g. 'trn2.48xlarge'), not "
             "'neuron:N'; total_memory is the logical core's HBM limit (0 when the runtime query fails). "
             "No major/minor/multi_processor_count",
    ),
    Entry(
        "get_device_name",
        (Param("device", 0),),
        (_src(NEURON_PY, "def get_device_name(device=0)"),),
        accepts={"device": "int -> 'neuron:<int>'; torch.device -> str(device)"},
        raises=(("ValueError", "any other type, including str and None ('Incorrect device argument found')"),),
        note="the default is 0, not the current device (CUDA: None -> current device)",
    ),
    Entry(
        "Stream",
        (Param("kwargs", REQUIRED, "var_keyword"),),
        (_src(NEURON_PY, "def Stream(**kwargs)"), _src(STREAMS_PY, "Stream.__new__(cls, device=None, priority=0, **kwargs)")),
        accepts={"kwargs": "device= (as torch.neuron.device), priority= (lower is higher priority); other "
                           "keywords are ignored unless stream_id/device_index/device_type are all given"},
        raises=(("TypeError", "any positional argument: torch.neuron.Stream is a function taking **kwargs"),
                _DEVICE_VALUE_ERROR),
        note="the priority range is checked in C++ (_NeuronStreamBase), which was not read",
    ),
    Entry(
        "Event",
        (Param("enable_timing", False), Param("blocking", False)),
        (_src(NEURON_PY, "def Event(enable_timing=False, blocking=False)"), _src(STREAMS_PY, "Event.__new__")),
        raises=(("TypeError", "interprocess= or external= (CUDA's third and fourth parameters)"),),
        returns_attributes=("record", "wait", "query", "elapsed_time", "synchronize"),
    ),
    Entry("stream", (Param("stream", REQUIRED),), (_src(NEURON_PY, "def stream(stream)"), _src(INIT_PY, "class StreamContext")),
          note="None selects nothing"),
    Entry("current_stream", _device_param(), (_src(NEURON_PY, "def current_stream(device=None)"),
                                              _src(INIT_PY, "def current_stream / _get_device_index")),
          accepts={"device": _DEVICE_INDEX}, raises=(_DEVICE_VALUE_ERROR,),
          returns_attributes=("wait_event", "wait_stream", "record_event", "query", "synchronize", "device")),
    Entry("default_stream", _device_param(), (_src(NEURON_PY, "def default_stream(device=None)"),
                                              _src(INIT_PY, "def default_stream / _get_device_index")),
          accepts={"device": _DEVICE_INDEX}, raises=(_DEVICE_VALUE_ERROR,),
          returns_attributes=("wait_event", "wait_stream", "record_event", "query", "synchronize", "device")),
    Entry("set_stream", (Param("stream", REQUIRED),), (_src(NEURON_PY, "def set_stream(stream)"),)),
    Entry("wait_stream", (Param("stream", REQUIRED),), (_src(NEURON_PY, "def wait_stream(stream)"),)),
    Entry("wait_event", (Param("event", REQUIRED),), (_src(NEURON_PY, "def wait_event(event)"),)),
    Entry("record_event", (Param("event", None),), (_src(NEURON_PY, "def record_event(event=None)"),)),
    Entry("query", (), (_src(NEURON_PY, "def query()"),)),
    Entry("is_bf16_supported", (), (_src(NEURON_PY, "def is_bf16_supported()"),),
          raises=(("TypeError", "any argument (CUDA's including_emulation=)"),), note="always True"),
    Entry("get_amp_supported_dtype", (), (_src(NEURON_PY, "def get_amp_supported_dtype()"),)),
    Entry("init", (), (_src(NEURON_PY, "def init()"), _src(INIT_PY, "def _lazy_init()")),
          raises=(("RuntimeError", "in a forked child after the parent initialised the runtime"),)),
    Entry("is_initialized", (), (_src(NEURON_PY, "def is_initialized()"), _src(INIT_PY, "is_neuron_runtime_initialized")),
          note="whether the Neuron runtime has started (init_process_group asserts it has not)"),
    Entry("get_dynamo_metrics", (), (_src(NEURON_PY, "def get_dynamo_metrics()"),)),
    Entry("reset_dynamo_metrics", (), (_src(NEURON_PY, "def reset_dynamo_metrics()"),)),
    Entry("memory", (), (_src(NEURON_PY, "from torch_neuronx import memory"),), kind="module",
          note="torch.neuron.memory.<name>: the memory_* functions of torch_neuronx/memory.py"),
)

TABLE: dict[str, Entry] = {entry.name: entry for entry in _ENTRIES}

# What a renamed torch.cuda call must change because the Neuron signature differs (the rule
# cuda-namespace does each of these; tests/test_neuron_api.py derives the list from torch.cuda).
ARGUMENT_FIXES: dict[str, str] = {
    "Stream": "positional device/priority -> keywords ('cuda:N' -> 'neuron:N')",
    "Event": "interprocess=/external=: False dropped, anything else a marker",
    "is_bf16_supported": "including_emulation dropped (always True on Neuron)",
    "get_device_name": "str literal -> int index, None -> current_device(); other values a marker",
    "set_device": "'cuda:N' literal -> N; other strings a marker",
    "set_rng_state": "new_state= -> state=",
    "device": "device= -> positional; a positional 'cuda:N' -> 'neuron:N'",
    "synchronize": "a positional 'cuda:N' -> 'neuron:N' (torch_neuronx._get_device_index: neuron devices only)",
    "current_stream": "a positional 'cuda:N' -> 'neuron:N'",
    "default_stream": "a positional 'cuda:N' -> 'neuron:N'",
    "get_device_properties": "a positional 'cuda:N' -> 'neuron:N'; attributes other than name/total_memory a marker",
}

# Attributes of get_device_properties(...) that exist on Neuron; any other is a marker.
DEVICE_PROPERTIES = TABLE["get_device_properties"].returns_attributes or ()


def unverified() -> list[str]:
    """Names whose entry could not be checked against the source (rules treat them as review)."""
    return [name for name, entry in TABLE.items() if not entry.verified]
