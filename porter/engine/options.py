"""Options that change what a port does. Immutable, so results and cache keys can depend on them."""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

# Text that shows a file already written for Neuron: such a file is "being ported" even with no
# CUDA-ism left (the engine), and so is its repository (the run's repository-wide scope).
TARGETS_NEURON = r"""["']neuron(?::\d+)?["']|\bneuron:\{|\.neuron\b|torch_neuronx"""

Style = Literal["neuron", "accelerator"]

DEFAULT_MAX_FILE_SIZE = 4 * 1024 * 1024  # bytes; larger files are refused, not parsed
DEFAULT_TIME_LIMIT = 120.0  # seconds one file may take to port; 0 = no limit
DEFAULT_LOG_INTERVAL = 10  # steps between host-synchronising log lines the host-sync rules introduce


@dataclass(frozen=True)
class Options:
    """What to port and how.

    ``select``/``ignore`` hold rule codes or code prefixes (``NRN1`` selects NRN100-NRN199);
    an empty ``select`` means every rule. ``style="accelerator"`` ports to device-generic
    ``torch.accelerator`` code instead of writing ``neuron`` explicitly. ``all_files`` runs the
    performance rules (compile, optimizers, host syncs, static shapes) on every file, not only on
    files that are being ported (those with a CUDA-ism or already targeting ``neuron``).
    ``time_limit``: seconds one file may take (in a batch worker or in-process on the main thread);
    a file that takes longer is a per-file Failure and is left as it was. 0 means no limit. It is
    not part of the cache key: it never changes a port that finishes (and a time-out is not cached).
    """

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    style: Style = "neuron"
    all_files: bool = False
    log_interval: int = DEFAULT_LOG_INTERVAL
    insert_compile: bool = True
    hf_async_load_env: bool = True
    prefilter: bool = True
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    time_limit: float = DEFAULT_TIME_LIMIT
    suppress: tuple[str, ...] = ()  # codes/prefixes never applied to this file ([tool.porter] per-file-ignores)
    repo_in_port: bool = False  # set by a batch run: the file's repository has a CUDA-ism
    extra: tuple[tuple[str, str], ...] = field(default=())
    # The project's own modules the file imports, as (module as the file spells it, path, SHA-256
    # of its bytes): set by the runner (porter/run/local_imports.py), read through
    # porter.engine.imported. In the cache key, so a changed module re-ports the files importing it.
    imports: tuple[tuple[str, str, str], ...] = field(default=())

    def selects(self, code: str) -> bool:
        """Whether a change with ``code`` is wanted under select/ignore (longest prefix wins);
        a ``suppress`` code (per-file-ignores) is never wanted, whatever ``select`` says."""
        if self.suppress and code.startswith(self.suppress):
            return False
        chosen = _longest_prefix(code, self.select) if self.select else 0
        if self.select and chosen < 0:
            return False
        dropped = _longest_prefix(code, self.ignore)
        return dropped < 0 or chosen > dropped

    def with_changes(self, **changes: object) -> Options:
        return replace(self, **changes)  # type: ignore[arg-type]

    def cache_key(self) -> str:
        return _cache_key(self)


@functools.lru_cache(maxsize=64)
def _cache_key(options: Options) -> str:
    """Every file of a run has one of a few equal Options (a new object per file): the key is
    built once per distinct value, not once per file (asdict was a tenth of a warm batch)."""
    fields = asdict(options)
    del fields["time_limit"]
    return json.dumps(fields, sort_keys=True)


def _longest_prefix(code: str, prefixes: tuple[str, ...]) -> int:
    """Length of the longest prefix in ``prefixes`` that ``code`` starts with, or -1."""
    best = -1
    for prefix in prefixes:
        normalized = prefix.strip().upper()
        if normalized == "ALL":
            best = max(best, 0)
        elif code.startswith(normalized):
            best = max(best, len(normalized))
    return best
