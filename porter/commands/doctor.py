"""``porter doctor``: the CLI over :mod:`porter.audit.doctor`."""

from __future__ import annotations

import json
import sys

import click

from porter.audit import doctor

_STYLE = {"ok": "green", "info": "cyan", "warning": "yellow", "error": "bold red"}


def _render_rich(report: doctor.DoctorReport) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    table = Table(title=f"porter doctor: {report.environment.executable}", show_lines=True)
    table.add_column("check")
    table.add_column("status")
    table.add_column("finding")
    table.add_column("fix")
    for f in report.findings:
        finding = escape(f.summary) + (f"\n[dim]{escape(f.detail)}[/dim]" if f.detail else "")
        table.add_row(escape(f.check), f"[{_STYLE[f.status]}]{f.status}[/]", finding, escape(f.fix))
    console.print(table)
    console.print(_verdict(report), markup=False, highlight=False)


def _render_plain(report: doctor.DoctorReport) -> None:
    click.echo(f"porter doctor: {report.environment.executable}")
    for f in report.findings:
        click.echo(f"[{f.status:7}] {f.check}: {f.summary}")
        if f.detail and f.status != "ok":
            click.echo(f"          {f.detail}")
        if f.fix and f.status in ("warning", "error"):
            click.echo(f"          fix: {f.fix}")
    click.echo(_verdict(report))


def _verdict(report: doctor.DoctorReport) -> str:
    errors, warnings = len(report.errors), len(report.warnings)
    if errors:
        return f"{errors} problem(s) that would break a Neuron run, {warnings} warning(s)."
    return f"No problem that would break a Neuron run ({warnings} warning(s))."


@click.command(
    "doctor",
    epilog="Exit codes: 0 nothing would break (warnings allowed); 1 something would break "
    "(each with its fix); 2 errors (the --python interpreter could not be run).",
)
@click.option(
    "--python",
    "python",
    type=click.Path(dir_okay=False),
    default=None,
    help="Inspect this interpreter's environment (e.g. a venv's bin/python) instead of porter's own. "
    "It runs a tiny stdlib-only probe there to learn its sys.path.",
)
@click.option(
    "--path",
    "paths",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Search these folders (site-packages) for distributions instead of sys.path. Repeatable.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
def command(python: str | None, paths: tuple[str, ...], as_json: bool) -> int:
    """Check a Python environment for what breaks a TorchNeuron (torch-neuronx) setup.

    Reads installed packages with importlib.metadata and never imports torch: Python version,
    torch version and build (CPU/CUDA/ROCm), torch-neuronx family (native 2.13/2.14 or legacy XLA),
    torch <-> torch-neuronx pairing, torch-xla beside the native backend, a CUDA torch beside
    torch-neuronx, TORCH_DEVICE_BACKEND_AUTOLOAD, /dev/neuron* device nodes, and PyPI's empty
    placeholder packages. Every problem comes with the exact command that fixes it.
    """
    try:
        if python and paths:
            raise click.UsageError("give --python or --path, not both")
        env = doctor.probe(python) if python else doctor.collect(list(paths) or None)
    except doctor.ProbeError as error:
        click.echo(f"porter doctor: {error}", err=True)
        return 2
    report = doctor.diagnose(env)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    elif sys.stdout.isatty():
        _render_rich(report)
    else:
        _render_plain(report)
    return report.exit_code
