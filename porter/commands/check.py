"""``porter check``: run a ported script through (an approximation of) TorchNeuron's front end."""

from __future__ import annotations

import json
import os
import sys
import unicodedata
from collections.abc import Callable

import click

HELP = """Run SCRIPT for a few optimizer steps on the `neuron` device and prove the port compiles
(and, with --against, trains the same as the original).

\b
Targets:
  emulated  CPU-only: `neuron` is emulated on the CPU; torch.compile(backend="neuron") runs
            Dynamo -> AOTAutograd -> upstream torch-mlir StableHLO lowering, then executes on the
            CPU. This is an upstream torch-mlir approximation of TorchNeuron's front end:
            neuronx-cc, NEFF generation and the Neuron runtime do not run.
  device    On Trn2/Trn3 with torch-neuronx: the real backend, plus get_fallback_ops() and
            get_dynamo_metrics() in the report.
  auto      device when a real torch-neuronx and /dev/neuron0 exist, else emulated.

\b
Pass arguments to the script after `--`:  porter check train.py --steps 5 -- --lr 0.1

\b
Exit codes:
  0  compiled (and, with --against, matched); "not verified" graphs (known upstream
     torch-mlir gaps) are listed but do not fail unless --strict
  1  findings fail the check: lowering failures outside the known-gap table, symbolic shapes,
     graph breaks under fullgraph=True, recompiles after warm-up (see Recompiles), per-step host syncs
     (a `# porter: NRN6xx` marker excuses one only when it says the sync is deliberate:
     control flow, a logging interval), CPU/neuron mixing, CUDA left in the port, no tensor
     on the neuron device, nothing compiled (unless --allow-eager), parity mismatch or a
     parity pass with no verdict, GradScaler with a fused optimizer
  2  the script crashed (traceback shown, mapped to its line) or timed out; bad usage

\b
Recompiles: a region compiled again at step 1 only (a guard on state its first call set, such as a
lazily set attribute) is warm-up: one extra graph compile on Neuron, not one per step. It is a
warning (fails only with --strict) when the run shows it stable (at least 3 steps, nothing new
compiled for that region in steps 2..) and it happened at most twice; otherwise, and at any step
>= 2, a recompile fails the check. The report says which (JSON kind "warm-up-recompile" or
"recompile").
\b
Steps: counted by optimizer.step(); a script that makes no optimizer (hand-written updates)
is counted by backward() calls. The report says which.
Distributed: --nproc N starts N ranks (RANK/LOCAL_RANK/WORLD_SIZE set); a script that starts
its own ranks (mp.spawn) is started once and sees N devices. The emulated `neuron` collective
backend runs on gloo.
"""


@click.command("check", help=HELP, context_settings={"ignore_unknown_options": False})
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--steps", type=click.IntRange(min=1), default=3, show_default=True,
              help="Stop the script after N steps: optimizer steps, or backward() calls when it makes no optimizer (step 0 is warm-up).")
@click.option("--target", type=click.Choice(["emulated", "device", "auto"]), default="auto", show_default=True,
              help="Where to run: emulated neuron device on CPU, a real Neuron device, or pick automatically.")
@click.option("--against", "against", type=click.Path(exists=True, dir_okay=False), default=None,
              help="ORIGINAL.py: run the unported script with CUDA emulated on the CPU and compare losses "
                   "(fp32 semantic pass, then a precision pass as written).")
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="Seconds each run may take before it is killed (exit 2).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the full report as JSON to FILE ('-' for stdout).")
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run N ranks of a distributed script (RANK/LOCAL_RANK/WORLD_SIZE set; a script that calls "
                   "mp.spawn is started once and sees N devices). The emulated `neuron` backend runs on gloo.")
@click.option("--dump", "dump_dir", type=click.Path(file_okay=False), default=None,
              help="Write every graph (Dynamo FX, AOT forward/backward FX, StableHLO or the lowering error) to DIR.")
@click.option("--bisect", is_flag=True, default=False,
              help="When a graph fails to lower, name the submodule and source line of each failing op.")
@click.option("--strict", is_flag=True, default=False,
              help="Also fail on warnings (graph breaks without fullgraph, float64) and on graphs not verified.")
@click.option("--allow-eager", is_flag=True, default=False,
              help="Do not fail when nothing was compiled (a port meant to run eagerly, op by op).")
@click.option("--one-at-a-time", is_flag=True, default=False,
              help="Run the port's and the original's runs one after another, not two at once (slower): for a "
                   "script that writes files under fixed names, such as a dataset it records in a cache.")
def command(
    script: str,
    script_args: tuple[str, ...],
    steps: int,
    target: str,
    against: str | None,
    timeout: float,
    json_path: str | None,
    nproc: int,
    dump_dir: str | None,
    bisect: bool,
    strict: bool,
    allow_eager: bool,
    one_at_a_time: bool,
) -> int:
    import importlib.util

    if importlib.util.find_spec("torch") is None:  # one line, as `porter doctor` says it
        click.echo("porter check: torch is not installed; install the CPU build with "
                   "`python -m pip install 'porter-neuron[check]' --index-url https://download.pytorch.org/whl/cpu "
                   "--extra-index-url https://pypi.org/simple`", err=True)
        return 2
    from porter.check.orchestrate import CheckOptions, run_check
    from porter.check.render import render

    options = CheckOptions(
        script=os.path.abspath(script),
        args=tuple(script_args),
        steps=steps,
        target=target,
        against=os.path.abspath(against) if against else None,
        timeout=timeout,
        nproc=nproc,
        dump_dir=os.path.abspath(dump_dir) if dump_dir else None,
        bisect=bisect,
        strict=strict,
        allow_eager=allow_eager,
        one_at_a_time=one_at_a_time,
        on_stage=_say_stage,
    )
    if target == "device":
        from porter.check.orchestrate import real_device_available

        if not real_device_available():
            click.echo("note: --target device without a real torch-neuronx and /dev/neuron0; running anyway", err=True)
    _say_stage(f"checking {script} ({steps} step{'s' if steps != 1 else ''}" + (f", against {against})" if against else ")"))
    report = run_check(options)
    if json_path == "-":
        click.echo(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        _render(report, render)
        if json_path:
            with open(json_path, "w", encoding="utf-8") as handle:
                json.dump(report.to_dict(), handle, indent=2, default=str)
    return report.exit_code


def _say_stage(line: str) -> None:
    """A stage of the check, on stderr as plain text while the runs go (stdout stays the report's)."""
    click.echo(f"porter check: {line}", err=True)


def _render(report: object, render: Callable[..., None]) -> None:
    """The rich report on a terminal; piped, the same text without colour and with ASCII boxes."""
    if sys.stdout.isatty():
        render(report)
        return
    import io

    from rich.console import Console

    buffer = io.StringIO()
    render(report, Console(file=buffer, color_system=None, width=120, emoji=False, highlight=False))
    click.echo(buffer.getvalue().translate(_ASCII_BOXES), nl=False)


def _box_char(code: int) -> str:
    name = unicodedata.name(chr(code), "")
    if "HORIZONTAL" in name and "VERTICAL" not in name:
        return "-"
    if "VERTICAL" in name and "HORIZONTAL" not in name and "AND" not in name:
        return "|"
    return "+"


_ASCII_BOXES = {code: _box_char(code) for code in range(0x2500, 0x2580)}
