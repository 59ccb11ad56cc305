"""Host-sync analysis shared by the NRN6xx rules (``rules/host_sync.py``). No rule lives here.

One analysis per file (``Rule.analysis(HostSyncAnalysis)``) finds the step loops, their step
counter and logging interval (``loops``), and sorts every host synchronisation on the per-step
path into what the rules do with it (``sites``): an accumulation to keep on the device
(``accumulators``), a logging statement to move under the interval and what moves with it
(``intervals``), a read of what an interval branch refreshes to move into it (``refreshed``), a
control-flow use to mark, a per-step ``synchronize()`` or a residual sync to mark. Each module's docstring states the heuristics it uses.
"""

from porter.rules._lib.hostsync.analysis import HostSyncAnalysis
from porter.rules._lib.hostsync.model import (
    ACCUMULATE,
    APPEND,
    CONSTANT,
    CONTROL,
    LOG,
    REFRESHED,
    RESIDUAL,
    SYNCHRONIZE,
    Feeder,
    RunningMean,
    Site,
    StepLoop,
)
from porter.rules._lib.hostsync.refreshed import Refresh
from porter.rules._lib.hostsync.syntax import has_comparison, iter_nodes, strip_host

__all__ = [
    "ACCUMULATE",
    "APPEND",
    "CONSTANT",
    "CONTROL",
    "LOG",
    "REFRESHED",
    "RESIDUAL",
    "SYNCHRONIZE",
    "Feeder",
    "HostSyncAnalysis",
    "Refresh",
    "RunningMean",
    "Site",
    "StepLoop",
    "has_comparison",
    "iter_nodes",
    "strip_host",
]
