"""The check's report model: immutable, JSON-serialisable dataclasses.

The harness (inside the script's subprocess) writes a plain-JSON *raw record*; ``porter.check.analyze``
turns it into these objects in porter's own process, where the user's source can be read to classify
host syncs (logging-interval branches, review markers) without slowing the run down.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

# Severities: "error" fails the check (exit 1); "warning" is shown and fails only under --strict;
# "info" never fails; "unverified" marks graphs the emulated front end could not verify (known gaps).
ERROR = "error"
WARNING = "warning"
INFO = "info"
UNVERIFIED = "unverified"

EMULATED_TARGET_NAME = "an upstream torch-mlir approximation of TorchNeuron's front end"


@dataclass(frozen=True)
class Finding:
    """One problem (or note), mapped to a source line and to the porter rule that addresses it."""

    kind: str  # e.g. "host-sync", "graph-break", "recompile", "lowering", "symbolic-shape", ...
    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    rule: str | None = None
    count: int = 1
    detail: str | None = None


@dataclass(frozen=True)
class GraphInfo:
    """One graph handed to the backend: a Dynamo region's forward, backward or inference graph."""

    graph_id: int
    region: str  # "function at file:line" of the compiled frame
    kind: str  # "forward" | "backward" | "inference"
    compile_id: str
    step: int
    nodes: int
    input_shapes: tuple[tuple[int, ...] | str, ...]
    lowered: bool | None  # None: lowering not attempted (device target)
    status: str  # "lowered" | "failed" | "unverified" | "not-run"
    error: str | None = None
    failed_ops: tuple[str, ...] = ()
    symbolic: tuple[str, ...] = ()
    bisect: str | None = None


@dataclass(frozen=True)
class Stage:
    """A pipeline stage and whether this run exercised it."""

    name: str
    ran: bool
    note: str = ""


@dataclass(frozen=True)
class ShapeSummary:
    """Distinct input shapes per compiled region: each one is a separate compile on Neuron."""

    region: str
    shapes: tuple[str, ...]


@dataclass(frozen=True)
class Padding:
    """Token accounting from batches that carried an attention_mask, or input_ids the graph
    compares with a pad id."""

    tokens: int
    padded: int
    sources: tuple[str, ...] = ("attention_mask",)

    @property
    def fraction(self) -> float:
        return self.padded / self.tokens if self.tokens else 0.0


@dataclass(frozen=True)
class ParityPass:
    """One loss comparison: per-step losses side by side and a verdict under a stated tolerance."""

    name: str  # "semantic (fp32)" | "precision (as written)"
    tolerance_name: str
    rtol: float
    atol: float
    port_losses: tuple[float | None, ...]
    original_losses: tuple[float | None, ...]
    max_rel_delta: float | None
    verdict: str  # "match" | "mismatch" | "no-verdict"
    note: str = ""


@dataclass(frozen=True)
class Parity:
    """Parity against the original script: passes, or why no verdict could be given."""

    original: str
    passes: tuple[ParityPass, ...] = ()
    no_verdict_reason: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Crash:
    """The script raised (or timed out): the traceback, and the user line it points at."""

    kind: str  # "exception" | "timeout" | "harness"
    message: str
    file: str | None = None
    line: int | None = None
    traceback: str = ""


@dataclass(frozen=True)
class CheckReport:
    """Everything ``porter check`` learned about one script."""

    script: str
    target: str  # "emulated" | "device"
    target_description: str
    steps_requested: int
    steps_run: int
    exit_code: int
    verdict: str
    stages: tuple[Stage, ...] = ()
    findings: tuple[Finding, ...] = ()
    graphs: tuple[GraphInfo, ...] = ()
    shapes: tuple[ShapeSummary, ...] = ()
    padding: Padding | None = None
    placements: dict[str, int] = field(default_factory=dict)
    syncs_per_step: dict[str, float] = field(default_factory=dict)
    # per-step syncs that are not findings: {file, line, kind, reason (interval or marker), count}
    excused_syncs: tuple[dict[str, Any], ...] = ()
    step_counter: str | None = None  # what --steps counted: "optimizer.step()" | "backward()"
    losses: tuple[float | None, ...] = ()
    parity: Parity | None = None
    crash: Crash | None = None
    # with --against: the original's own crash in its as-written run (None: it did not crash), at
    # its innermost frame in the original's files (a check of whether the port's crash is its own)
    original_crash: Crash | None = None
    fallback_ops: tuple[str, ...] | None = None
    dynamo_metrics: tuple[dict[str, Any], ...] | None = None
    notes: tuple[str, ...] = ()
    device_env: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0
    # The harness's raw record of the main run (every sync with its stack, placement, graph,
    # compile call): what --json promises as "everything", for tools that want more than findings.
    raw: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples become lists; computed padding fraction included)."""
        data = dataclasses.asdict(self)
        if self.padding is not None:
            data["padding"]["fraction"] = self.padding.fraction
        return data

    def failing(self, strict: bool = False) -> tuple[Finding, ...]:
        """Findings that fail the check: errors, plus warnings and unverified graphs under --strict."""
        bad = {ERROR, WARNING, UNVERIFIED} if strict else {ERROR}
        return tuple(f for f in self.findings if f.severity in bad)
