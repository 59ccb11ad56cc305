"""The terminal report (rich). Every section is printed, empty ones say so: an absent section must
never be mistaken for a clean one."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from porter.check import parity as parity_mod
from porter.check.report import ERROR, UNVERIFIED, WARNING, CheckReport

_STYLE = {ERROR: "bold red", WARNING: "yellow", UNVERIFIED: "magenta", "info": "dim"}


def _loc(file: str | None, line: int | None) -> str:
    if not file:
        return "-"
    return f"{file}:{line}" if line else file


def render(report: CheckReport, console: Console | None = None) -> None:
    console = console or Console()
    head = Text.assemble(
        ("porter check ", "bold"), (report.script, "cyan"),
        f"  target: {report.target} — {report.target_description}",
        f"\nsteps: {report.steps_run} run of {report.steps_requested} requested"
        f" (counted by {report.step_counter or 'nothing: no step ran'})   wall: {report.wall_s:.1f}s",
    )
    console.print(Panel(head, expand=False))

    stages = Table(title="Stages", title_justify="left", show_header=True)
    stages.add_column("stage")
    stages.add_column("ran")
    stages.add_column("note")
    for stage in report.stages:
        stages.add_row(Text(stage.name), "yes" if stage.ran else "no", Text(stage.note))
    console.print(stages)

    if report.crash is not None:
        crash = report.crash
        body = f"{crash.message}\nat {_loc(crash.file, crash.line)}\n\n{crash.traceback[-3000:]}"
        console.print(Panel(Text(body), title=f"script {crash.kind}", border_style="red"))

    findings = Table(title=f"Findings ({len(report.findings)})", title_justify="left")
    for col in ("severity", "kind", "where", "rule", "message"):
        findings.add_column(col, overflow="fold")
    for f in report.findings:
        message = f.message + (f"  [x{f.count}]" if f.count > 1 else "") + (f"\n  {f.detail}" if f.detail else "")
        findings.add_row(Text(f.severity, style=_STYLE.get(f.severity, "")), Text(f.kind), Text(_loc(f.file, f.line)), Text(f.rule or "-"), Text(message))
    if not report.findings:
        findings.add_row("-", "-", "-", "-", "none")
    console.print(findings)

    graphs = Table(title=f"Graphs ({len(report.graphs)})", title_justify="left")
    for col in ("#", "region", "kind", "compile", "step", "nodes", "StableHLO", "failed ops"):
        graphs.add_column(col, overflow="fold")
    for g in report.graphs:
        graphs.add_row(*(Text(x) for x in (str(g.graph_id), g.region, g.kind, g.compile_id, str(g.step), str(g.nodes), g.status, ", ".join(g.failed_ops) or "-")))
    if not report.graphs:
        graphs.add_row("-", "no compiled graph", "", "", "", "", "", "")
    console.print(graphs)

    if report.shapes:
        shapes = Table(title="Input shapes per compiled region (each is one compile on Neuron)", title_justify="left")
        shapes.add_column("region")
        shapes.add_column("distinct input shapes", overflow="fold")
        for s in report.shapes:
            shapes.add_row(Text(s.region), Text(f"{len(s.shapes)}: " + " | ".join(s.shapes)))
        console.print(shapes)
    if report.padding is not None:
        pad = report.padding
        console.print(f"Padded tokens: {pad.padded}/{pad.tokens} = {pad.fraction:.1%} (from {', '.join(pad.sources)})", markup=False)

    syncs = ", ".join(f"{k}: {v:g}" for k, v in report.syncs_per_step.items())
    console.print(f"Host syncs — {syncs or 'none'}", markup=False)
    for e in report.excused_syncs:
        console.print(f"  excused: `{e['kind']}` at {_loc(e['file'], e['line'])} x{e['count']} — {e['reason']}", markup=False)
    placements = ", ".join(f"{k}: {v}" for k, v in report.placements.items())
    console.print(f"Placements — {placements or 'none'}", markup=False)
    if report.losses:
        console.print("Losses — " + ", ".join("-" if v is None else f"{v:.6f}" for v in report.losses), markup=False)

    if report.parity is not None:
        _render_parity(report, console)
    if report.fallback_ops is not None:
        console.print(f"CPU fallback ops (torch_neuronx.get_fallback_ops): {', '.join(report.fallback_ops) or 'none'}", markup=False)
    if report.dynamo_metrics is not None:
        console.print(f"Compiled graphs (torch.neuron.get_dynamo_metrics): {len(report.dynamo_metrics)}")
    if report.device_env:
        console.print("Environment worth setting for a device run:")
        for key, value in report.device_env.items():
            console.print(f"  {key}={value}", markup=False)
    for note in report.notes:
        console.print(Text(f"note: {note}", style="dim"))
    style = "green" if report.exit_code == 0 else ("red" if report.exit_code == 1 else "bold red")
    console.print(Text(f"verdict: {report.verdict} (exit {report.exit_code})", style=style))


def _render_parity(report: CheckReport, console: Console) -> None:
    p = report.parity
    assert p is not None
    tolerances = (
        f"SEMANTIC_RTOL_EAGER={parity_mod.SEMANTIC_RTOL_EAGER:g}, SEMANTIC_RTOL_COMPILED={parity_mod.SEMANTIC_RTOL_COMPILED:g}, "
        f"PRECISION_RTOL={parity_mod.PRECISION_RTOL:g}, LOSS_ATOL={parity_mod.LOSS_ATOL:g}"
    )
    console.print(f"Parity against {p.original} — tolerances: {tolerances}", markup=False)
    if p.no_verdict_reason:
        console.print(Text(f"no verdict: {p.no_verdict_reason}", style="yellow"))
    for ps in p.passes:
        table = Table(title=Text(f"{ps.name}: {ps.verdict} ({ps.tolerance_name} = {ps.rtol:g})"), title_justify="left")
        table.add_column("step")
        table.add_column("port")
        table.add_column("original")
        table.add_column("rel. delta")
        for i in range(max(len(ps.port_losses), len(ps.original_losses))):
            a = ps.port_losses[i] if i < len(ps.port_losses) else None
            b = ps.original_losses[i] if i < len(ps.original_losses) else None
            delta = "-" if a is None or b is None else f"{parity_mod.relative_delta(a, b):.2e}"
            table.add_row(str(i), "-" if a is None else f"{a:.6f}", "-" if b is None else f"{b:.6f}", delta)
        console.print(table)
        if ps.note:
            console.print(Text(ps.note, style="dim"))
    for note in p.notes:
        console.print(Text(f"note: {note}", style="dim"))
