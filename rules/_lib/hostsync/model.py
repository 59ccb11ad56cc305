"""What the host-sync analysis finds: step loops and the sites on their per-step path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

CONSTANT = "LOG_INTERVAL"
INTERVAL_NAME = re.compile(
    r"^(log_interval|log_every|log_freq|log_frequency|log_steps|logging_steps|logging_interval|print_freq|"
    r"print_every|print_interval|disp_freq|display_interval|log_every_n_steps|LOG_INTERVAL|LOG_EVERY|PRINT_FREQ)$"
)
# An existing `if X % Y == 0` is a logging interval only if Y is named like one (any part of it).
LOGGING_WORD = re.compile(r"(?i)(log|print|disp|report|verbose|show)")
OPTIMIZER_NAME = re.compile(r"(?i)(^|_)(optimi[sz]er|optim|opt)s?(_|$)")
LOADER_NAME = re.compile(r"(?i)(loader|_dl$|^dl$|dataloader)")
EVAL_FUNCTION = re.compile(r"(?i)(eval|valid)")
TENSOR_NAME = re.compile(r"(?i)loss")
SYNC_METHODS = frozenset({"item", "tolist", "numpy"})
LOG_METHODS = frozenset(
    {"set_postfix", "set_postfix_str", "set_description", "write", "add_scalar", "add_scalars", "log", "info", "debug"}
)
LOG_FUNCTIONS = frozenset({"print", "pprint"})
# print_rank_0(...), rank0_print(...), log_metrics(...): helpers whose name says they print or log.
LOG_HELPER = re.compile(r"(?i)^(print_\w+|\w+_print|log_\w+|\w+_log)$")
EXIT_CALLS = frozenset({"sys.exit", "exit", "quit", "os._exit"})

# Site kinds.
ACCUMULATE = "accumulate"
APPEND = "append"
LOG = "log"
CONTROL = "control"
SYNCHRONIZE = "synchronize"
RESIDUAL = "residual"
REFRESHED = "refreshed"  # a residual read of what an interval branch refreshes: read there (refreshed.py)
UNLOGGED = "unlogged"  # a sync in a statement NRN612 runs only with a logger (unlogged.py)


@dataclass
class StepLoop:
    node: cst.For | cst.While
    kind: str  # "train" | "eval"
    function: cst.FunctionDef | None
    counter: str | None = None  # text of the step counter expression
    interval: str | None = None  # text of the interval expression
    needs_enumerate: bool = False  # a For with no counter: the logging rule adds enumerate()
    uses_constant: bool = False
    tensors: set[str] | None = None  # names known to hold tensors in the loop's function (lazy)

    @property
    def every(self) -> str:
        """How often the loop body runs, as a marker says it."""
        return "every step" if self.kind == "train" else "every evaluation batch"

    @property
    def unit(self) -> str:
        return "steps" if self.kind == "train" else "batches"

    @property
    def per(self) -> str:
        return "per step" if self.kind == "train" else "per evaluation batch"


@dataclass
class RunningMean:
    """A logged accumulator reset right after the log: logged as its mean over the interval."""

    name: str  # the accumulator
    reset: cst.SimpleStatementLine  # `name = 0.0` after the log, moved into the interval branch
    init: cst.SimpleStatementLine  # `name = 0.0` before the loop: the step count starts next to it
    count: str  # the new step-count name
    reads: list[cst.CSTNode] = field(default_factory=list)  # reads of `name` (or `float(name)`) in the log


@dataclass
class Feeder:
    """``d_x = out.mean().item()``: a per-step sync whose value only a moved log statement reads.

    The sync becomes ``.detach()`` and each read in the log ``d_x.item()`` (same value, read
    when it is logged)."""

    statement: cst.SimpleStatementLine
    sync: cst.Call  # the `.item()` call to drop
    reads: list[cst.Name] = field(default_factory=list)


@dataclass
class Site:
    kind: str
    statement: cst.BaseStatement  # SimpleStatementLine or compound statement
    node: cst.CSTNode  # the small statement / expression the site is about
    loop: StepLoop
    syncs: list[cst.CSTNode] = field(default_factory=list)
    # ACCUMULATE / APPEND: the accumulator name and the reads to wrap (Name nodes / sum() calls)
    target: str | None = None
    wraps: list[tuple[cst.CSTNode, str]] = field(default_factory=list)
    note: str = ""
    # LOG: values read from per-step syncs elsewhere, and an accumulator logged as a running mean.
    feeders: list[Feeder] = field(default_factory=list)
    mean: RunningMean | None = None
    kept: bool = False  # a log statement left per-step (see intervals.py): ``note`` says why
    # LOG: ``logs = {"loss": loss.item()}`` right before ``pbar.set_postfix(**logs)``: moves with it.
    carried: cst.SimpleStatementLine | None = None
    # LOG in a function the loop calls (``train(epoch)``): the counter as that function names it.
    counter: str | None = None
