"""``run_check``: the runs one ``porter check`` needs, and the report they add up to.

Without ``--against``: one run of the port as written. With it, three more: the port and the
original in the fp32 semantic setting, and the original as written (the precision pass compares it
with the first run).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from porter.check import analyze, parity, source
from porter.check.report import ERROR, INFO, CheckReport, Crash, Finding, Parity, ParityPass
from porter.check.runner import RunResult, RunSpec, run, spawns_ranks

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_CRASH = 2


@dataclass(frozen=True)
class CheckOptions:
    script: str
    args: tuple[str, ...] = ()
    steps: int = 3
    target: str = "auto"
    against: str | None = None
    timeout: float = 300.0
    nproc: int = 1
    dump_dir: str | None = None
    bisect: bool = False
    strict: bool = False
    seed: int = 0
    allow_eager: bool = False
    # the runs take turns: a script that writes files under fixed names (a dataset it records) races with itself
    one_at_a_time: bool = False
    on_stage: Callable[[str], None] | None = field(default=None, compare=False)  # progress lines, as they come


def real_device_available() -> bool:
    """A real torch-neuronx (not porter's stand-in) and a Neuron device node."""
    spec = importlib.util.find_spec("torch_neuronx")
    if spec is None or spec.origin is None or "porter" in spec.origin.replace(os.sep, "/").split("/"):
        return False
    return os.path.exists("/dev/neuron0")


def resolve_target(target: str) -> str:
    if target == "auto":
        return "device" if real_device_available() else "emulated"
    return target


def _spec(options: CheckOptions, script: str, role: str, target: str, semantic: bool, dump: bool) -> RunSpec:
    say = options.on_stage
    label = ("the original" if role == "original" else "the port") + (" (fp32 pass)" if semantic else "")
    return RunSpec(
        on_stage=(lambda line: say(f"{label}: {line}")) if say else None,
        script=script,
        args=options.args,
        role=role,
        target=target,
        steps=options.steps,
        seed=options.seed,
        semantic=semantic,
        timeout=options.timeout,
        nproc=options.nproc,
        dump_dir=options.dump_dir if dump else None,
        bisect=options.bisect,
    )


# Runs of one check that may overlap (each is a subprocess; two keep two cores busy).
PARALLEL_RUNS = 2


def run_check(options: CheckOptions) -> CheckReport:
    started = time.perf_counter()
    target = resolve_target(options.target)
    specs = [_spec(options, options.script, "port", target, semantic=False, dump=True)]
    if options.against:
        specs += [
            _spec(options, options.against, "original", "emulated", semantic=False, dump=False),
            _spec(options, options.script, "port", target, semantic=True, dump=False),
            _spec(options, options.against, "original", "emulated", semantic=True, dump=False),
        ]
    # Scripts that spawn their ranks often pin MASTER_PORT themselves: their runs take turns.
    pinned = any(spawns_ranks(s.script) for s in specs) and options.nproc > 1
    with ThreadPoolExecutor(max_workers=1 if pinned or options.one_at_a_time else PARALLEL_RUNS) as pool:
        results = list(pool.map(run, specs))
    if options.against and options.on_stage:
        options.on_stage("comparing losses")
    report_parity = _parity(options, results[0], *results[1:]) if options.against else None
    if report_parity is not None and options.against:
        report_parity = _against_itself(options, report_parity, results[3], results[1])
        report_parity = _same_program(report_parity, results[3], results[1])
    original_crash = analyze.crash_of(results[1], options.against) if options.against else None
    return build_report(options, target, results[0], report_parity, time.perf_counter() - started, original_crash)


def _parity(
    options: CheckOptions, main: RunResult, original_written: RunResult, port_semantic: RunResult, original_semantic: RunResult
) -> Parity:
    assert options.against is not None
    notes = (
        "semantic pass: autocast disabled and dropout disabled in both runs (fp32; dropout masks differ "
        "between compiled and eager graphs), same seeds (random, numpy, torch seeded by the harness; OS entropy and PYTHONHASHSEED pinned)",
        "precision pass: the port as written (bf16 on neuron) against the original as written (its own AMP)",
        "the original runs with CUDA emulated on the CPU, eagerly (its torch.compile is skipped: it is the baseline)",
        "loss = the tensor .backward() is called on; under GradScaler the tensor given to scaler.scale()",
    )
    reason = _cannot_run(original_written)
    if reason:
        return Parity(original=options.against, no_verdict_reason=reason, notes=notes)
    compiled = bool((port_semantic.record or {}).get("graphs"))
    rtol, rname = (
        (parity.SEMANTIC_RTOL_COMPILED, "SEMANTIC_RTOL_COMPILED")
        if compiled
        else (parity.SEMANTIC_RTOL_EAGER, "SEMANTIC_RTOL_EAGER")
    )
    semantic_note = _no_loss_reason(port_semantic, "port (fp32 run)") or _no_loss_reason(original_semantic, "original (fp32 run)")
    precision_note = _no_loss_reason(main, "port") or _no_loss_reason(original_written, "original")
    passes = (
        parity.compare(
            "semantic (fp32, dropout off)", rname, rtol,
            analyze.losses_by_step(port_semantic.record), analyze.losses_by_step(original_semantic.record), semantic_note,
        ),
        parity.compare(
            "precision (as written)", "PRECISION_RTOL", parity.PRECISION_RTOL,
            analyze.losses_by_step(main.record), analyze.losses_by_step(original_written.record), precision_note,
        ),
    )
    return Parity(original=options.against, passes=passes, notes=notes)


def _against_itself(options: CheckOptions, report_parity: Parity, original_semantic: RunResult,
                    original_written: RunResult | None = None) -> Parity:
    """A mismatch: run that pass's original once more (fp32 for the semantic pass, as written for
    the precision pass). When the original differs from itself under the same seeds, the script
    draws from a source the harness does not pin (the clock, thread or process timing; OS entropy
    and the hash seed are pinned: harness/entropy.py): the pass cannot judge the port, and the
    mismatch note says so with the original's own spread. The precision pass of a script with no
    autocast runs the same program as the semantic pass, so a mismatch there alone is no bf16 effect."""
    assert options.against is not None
    passes = list(report_parity.passes)
    firsts = (original_semantic, original_written)
    for i, p in enumerate(passes[:2]):
        first = firsts[i]
        if p.verdict != "mismatch" or first is None:
            continue
        again = run(_spec(options, options.against, "original", "emulated", semantic=(i == 0), dump=False))
        itself = parity.compare("original against itself", p.tolerance_name, p.rtol,
                                analyze.losses_by_step(again.record), analyze.losses_by_step(first.record))
        if itself.verdict != "mismatch":
            passes[i] = _sensitivity(options, p, semantic=(i == 0))
            continue
        kind = "fp32" if i == 0 else "as-written"
        note = (f"the original against itself (a second {kind} run, same seeds) differs by up to {itself.max_rel_delta:.3g}: "
                "the script's own run-to-run nondeterminism (a source the harness does not pin), so this pass "
                "cannot verify the port")
        passes[i] = _noted(p, note)
    return dataclasses.replace(report_parity, passes=tuple(passes))


def _same_program(report_parity: Parity, original_semantic: RunResult, original_written: RunResult) -> Parity:
    """An original that entered no enabled autocast and applied no dropout ran the same program in its
    semantic and as-written runs (the semantic pass turns off only those): losses that differ there
    come from a source the harness does not pin (the clock, another process's timing), so a pass that
    matched proves nothing; it gets no verdict, with the original's own spread."""
    written, semantic = original_written.record or {}, original_semantic.record or {}
    if not written or not semantic or written.get("autocast_seen") or written.get("dropout_seen"):
        return report_parity
    first, second = analyze.losses_by_step(written), analyze.losses_by_step(semantic)
    if len(first) != len(second):
        return report_parity  # stopped at different steps: not a spread of the same steps
    itself = parity.compare("original against itself", "SEMANTIC_RTOL_EAGER", parity.SEMANTIC_RTOL_EAGER, first, second)
    if itself.verdict != "mismatch" or itself.max_rel_delta is None:
        return report_parity
    note = (f"the original's two runs (fp32 and as written: the same program, with no autocast and no dropout) differ "
            f"by up to {itself.max_rel_delta:.3g} under the same seeds: the script's own run-to-run nondeterminism (a "
            "source the harness does not pin), so a match here proves nothing")
    passes = tuple(dataclasses.replace(_noted(p, note), verdict="no-verdict") if p.verdict == "match" else p
                   for p in report_parity.passes)
    return dataclasses.replace(report_parity, passes=passes)


def _sensitivity(options: CheckOptions, p: ParityPass, semantic: bool) -> ParityPass:
    """A mismatch where the original is stable: run that pass's original once more with every
    parameter moved one ulp after each optimizer step (harness/main.py's _nudge_hook), the rounding
    a compiled graph (or a fused optimizer) may do differently. A script whose losses amplify that
    (an RL script's rollouts feed on the policy it trains: a2c_mujoco's step-2 loss moves 0.6%)
    cannot be held to the pass's tolerance; the pass matches when the first SENSITIVITY_MIN_STEPS
    steps are within it (the first loss, and the loss after one update) and, at every later step
    the port is off, the nudged original is off at least as much (parity.within_sensitivity)."""
    assert options.against is not None
    if len(p.port_losses) != len(p.original_losses):
        return p  # the runs stopped at different steps: no rounding explains that
    spec = dataclasses.replace(_spec(options, options.against, "original", "emulated", semantic=semantic, dump=False), nudge=True)
    nudged = analyze.losses_by_step(run(spec).record)
    if not any(x is not None for x in nudged):
        note = "the sensitivity run (the original with one ulp added to every parameter after each step) gave no loss"
        return _noted(p, note)
    covered = parity.within_sensitivity(p.port_losses, p.original_losses, nudged, p.rtol)
    if covered is None:
        note = (f"the original with one ulp added to every parameter after each step (losses {_losses(nudged)}) "
                f"does not move as far at every step the port is off, or the port is off within the first "
                f"{parity.SENSITIVITY_MIN_STEPS} steps: not rounding, a difference")
        return _noted(p, note)
    first, worst = covered
    note = (f"within the original's own sensitivity: off by more than {p.tolerance_name} = {p.rtol:g} from step {first}, "
            f"and the original with one ulp added to every parameter after each optimizer step (losses {_losses(nudged)}) "
            f"is off by up to {worst:.3g}, at least as much as the port at each of those steps: the script amplifies "
            "one rounding of its weights (a compiled graph, a fused optimizer or bf16 rounds differently), so the steps from "
            f"{first} on show rounding, not the port")
    return dataclasses.replace(_noted(p, note), verdict="match", tolerance_name=parity.SENSITIVITY_NAME)


def _noted(p: ParityPass, note: str) -> ParityPass:
    """The pass with ``note`` added after its own."""
    return dataclasses.replace(p, note=f"{p.note}; {note}" if p.note else note)


def _losses(losses: tuple[float | None, ...]) -> str:
    return "[" + ", ".join("-" if x is None else f"{x:.6g}" for x in losses) + "]"


def _counter_note(counter: str | None, record: dict) -> str:
    if counter == "optimizer.step()":
        return "steps counted by optimizer.step() (optimizer step hooks)"
    if counter == "backward()":
        return "steps counted by backward() calls: the script made no torch.optim optimizer (a hand-written update)"
    return f"no step counted: no optimizer.step() and no backward() ran ({record.get('backward_calls', 0)} backward call(s))"


def _nothing_compiled(record: dict, allow_eager: bool, script: str) -> Finding:
    """No graph reached the backend: the check verified no compile, whatever else it saw. Where
    porter's own marker says it chose not to compile a module, the finding is at that marker."""
    if record.get("compile_calls"):
        message = "torch.compile was called but no compiled region ran: nothing was compiled"
    else:
        message = "no torch.compile in the script: nothing was compiled (the port runs eagerly, op by op)"
    declined = source.declined_compiles(script)
    if declined:
        message += f"; porter left it uncompiled: {declined[0][1][:240]}" + (f" (+{len(declined) - 1} more)" if len(declined) > 1 else "")
    file = os.path.basename(script) if declined else None
    line = declined[0][0] if declined else None
    if allow_eager:
        return Finding(kind="nothing-compiled", severity=INFO, message=message + " (allowed by --allow-eager)", file=file, line=line)
    return Finding(kind="nothing-compiled", severity=ERROR, message=message + "; pass --allow-eager if that is intended",
                   rule=analyze.RULE_COMPILE_INSERT, file=file, line=line)


def _no_loss_reason(result: RunResult, who: str) -> str:
    """Why a run gave parity nothing to compare ("" when it has losses)."""
    record = result.record or {}
    if result.record is not None and record.get("losses"):
        return ""
    if result.timed_out:
        return f"the {who} timed out"
    if result.record is None:
        return f"the {who}'s run produced no result"
    status = record.get("status")
    if status == "crashed":
        error = record.get("error") or {}
        return f"the {who} crashed ({error.get('type')}: {str(error.get('message'))[:200]})"
    if not record.get("backward_calls"):
        return f"the {who} stopped after {record.get('steps', 0)} step(s) ({status}): no backward() ran"
    return f"no loss captured in the {who}: backward() ran {record.get('backward_calls')} time(s), never on a one-element tensor"


def _cannot_run(result: RunResult) -> str | None:
    if result.timed_out:
        return "the original timed out here: no verdict"
    if result.record is None:
        return "the original's run produced no result: no verdict"
    if result.record.get("status") == "crashed":
        error = result.record.get("error") or {}
        why = parity.cannot_run_reason(error.get("type"), error.get("message"))
        return (why or f"the original crashed here ({error.get('type')}: {str(error.get('message'))[:200]})") + ": no verdict"
    return None


def build_report(options: CheckOptions, target: str, main: RunResult, report_parity: Parity | None, wall_s: float,
                 original_crash: Crash | None = None) -> CheckReport:
    record = main.record or {}
    crash = analyze.crash_of(main, options.script)
    findings = analyze.findings_of(record, options.script, "port") if main.record else []
    steps_run = int(record.get("steps", 0))
    notes = list(record.get("notes", []))
    counter = record.get("step_counter")
    if main.record:
        notes.append(_counter_note(counter, record))
    if main.record and crash is None and not record.get("graphs"):
        findings.append(_nothing_compiled(record, options.allow_eager, options.script))
    if record.get("status") == "completed" and steps_run < options.steps:
        notes.append(f"the script finished after {steps_run} step(s) ({counter or 'no step counted'}), before --steps {options.steps}")
    if target == "emulated":
        notes.append("CPU fallback ops: unknown here. The emulated device runs every op on the CPU, so it "
                     "cannot tell which ops TorchNeuron would fall back to the CPU for; "
                     "--target device reports torch_neuronx.get_fallback_ops()")
    if options.nproc > 1:
        statuses = [r.get("status") if r else "no result" for r in main.ranks]
        notes.append(f"{options.nproc} processes (gloo): rank statuses {statuses}; findings are rank 0's")
    if report_parity is not None:
        for p in report_parity.passes:
            if p.verdict == "mismatch":
                findings.append(
                    Finding(
                        kind="parity",
                        severity=ERROR,
                        message=f"{p.name}: losses differ from the original by up to {p.max_rel_delta:.3g} relative "
                        f"(tolerance {p.tolerance_name} = {p.rtol:g})" + (f"; {p.note}" if p.note else ""),
                    )
                )
            elif p.verdict == "no-verdict":
                findings.append(Finding(kind="parity", severity=ERROR, message=f"{p.name}: no verdict: {p.note}"))
        if report_parity.no_verdict_reason:
            findings.append(Finding(kind="parity", severity=ERROR, message=report_parity.no_verdict_reason))
    order = {ERROR: 0, "warning": 1, "unverified": 2, INFO: 3}
    findings.sort(key=lambda f: (order.get(f.severity, 4), f.file or "", f.line or 0, f.kind))
    provisional = CheckReport(
        script=options.script, target=target, target_description="", steps_requested=options.steps,
        steps_run=steps_run, exit_code=0, verdict="", findings=tuple(findings),
    )
    if crash is not None:
        exit_code, verdict = EXIT_CRASH, "crashed" if crash.kind != "timeout" else "timed out"
    elif provisional.failing(options.strict):
        exit_code, verdict = EXIT_FINDINGS, "findings fail the check"
    else:
        exit_code = EXIT_OK
        passes = report_parity.passes if report_parity is not None else ()
        matched = bool(passes) and all(p.verdict == "match" for p in passes)
        verdict = "compiled" + (" and matched" if matched else "")
        sensitive = [p.name.split(" (")[0] for p in passes if p.tolerance_name == parity.SENSITIVITY_NAME]
        if matched and sensitive:
            verdict += f" ({' and '.join(sensitive)} pass within the original's own 1-ulp sensitivity)"
        if not record.get("graphs"):
            verdict = "ran eagerly on the emulated device (nothing compiled; --allow-eager)" if target == "emulated" else "ran eagerly (--allow-eager)"
            verdict += " and matched" if matched else ""
    return CheckReport(
        script=options.script,
        target=target,
        target_description=analyze.target_description(target),
        steps_requested=options.steps,
        steps_run=steps_run,
        exit_code=exit_code,
        verdict=verdict,
        stages=analyze.stages_of(main.record, target),
        findings=tuple(findings),
        graphs=analyze.graphs_of(record),
        shapes=analyze.shapes_of(record),
        padding=analyze.padding_of(record),
        placements=analyze.placements_of(record),
        syncs_per_step=analyze.syncs_per_step(record, steps_run),
        excused_syncs=analyze.excused_syncs(record, options.script),
        step_counter=counter,
        losses=analyze.losses_by_step(main.record),
        parity=report_parity,
        crash=crash,
        original_crash=original_crash,
        fallback_ops=tuple(record["fallback_ops"]) if record.get("fallback_ops") is not None else None,
        dynamo_metrics=tuple(record["dynamo_metrics"]) if record.get("dynamo_metrics") is not None else None,
        notes=tuple(notes),
        device_env=dict(analyze.DEVICE_ENV) if target == "device" else {},
        wall_s=wall_s,
        raw=record,
    )
