"""The file's host-sync analysis, shared by the NRN6xx rules through ``Rule.analysis``."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from porter.engine.fastcst.walk import TreeIndex
from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.hostsync.accumulators import Accumulators
from porter.rules._lib.hostsync.intervals import Intervals
from porter.rules._lib.hostsync.loops import StepLoops
from porter.rules._lib.hostsync.meters import MeterLoggers, MeterPlan
from porter.rules._lib.hostsync.model import Site, StepLoop
from porter.rules._lib.hostsync.refreshed import Refresh, plan_refreshes
from porter.rules._lib.hostsync.scope import FileScope
from porter.rules._lib.hostsync.sites import SiteCollector
from porter.rules._lib.hostsync.unlogged import UNLOGGED_CODE, Unlogged, plan_unlogged

METER_CODE = "NRN608"  # rules/host_sync.py: HostSyncLogging writes the meter plans


@dataclass
class HostSyncAnalysis(FileAnalysis):
    """Step loops (``loops.py``), their per-step sync sites (``sites.py``), which accumulations
    stay on the device (``accumulators.py``), which log statements move (``intervals.py``), which
    reads move into the interval branch that refreshes what they read (``refreshed.py``) and which
    metrics only a logger reads (``unlogged.py``)."""

    index: TreeIndex
    loops: list[StepLoop] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    constant_anchor: cst.BaseStatement | None = None  # insert LOG_INTERVAL after this statement
    constant_before: bool = False  # insert before the anchor instead
    meters: list[MeterPlan] = field(default_factory=list)  # metric loggers whose meters read tensors later (meters.py)
    refreshes: list[Refresh] = field(default_factory=list)  # reads moved into the branch that refreshes them (refreshed.py)
    unlogged: list[Unlogged] = field(default_factory=list)  # metrics read only for a logger, guarded by it (unlogged.py)

    def of_kind(self, *kinds: str) -> list[Site]:
        return [site for site in self.sites if site.kind in kinds]

    @classmethod
    def compute(cls, rule: Rule) -> HostSyncAnalysis:
        scope = FileScope(rule)
        finder = StepLoops(scope)
        loops = finder.find()
        sites = SiteCollector(scope, loops).collect()
        meters = MeterLoggers(scope).plans() if rule.options.selects(METER_CODE) else []
        handled = set().union(*(plan.handled() for plan in meters))
        if handled:  # the meter reads these when it prints: no longer per-step syncs
            sites = [site for site in sites if not (site.syncs and all(id(sync) in handled for sync in site.syncs))]
        accumulators = Accumulators(scope, loops, sites)
        accumulators.classify()
        sites.extend(accumulators.logs_reading_converted())
        # first: a read of what an interval branch refreshes keeps its statement's output every step
        refreshes = plan_refreshes(scope, sites)
        unlogged = plan_unlogged(scope, loops, sites) if rule.options.selects(UNLOGGED_CODE) else []
        Intervals(scope, sites, [line for plan in unlogged for line in plan.claimed]).decide()
        return cls(scope.index, loops, sites, finder.constant_anchor, finder.constant_before, meters, refreshes, unlogged)
