"""Turn the harness's raw record into findings, stages and a verdict (in porter's own process).

Severity policy (the issue's exit-code contract):
- error (exit 1): lowering failures outside the known-gap table, symbolic shapes, graph breaks under
  a ``fullgraph=True`` request, recompiles after warm-up (any at step >= 2; one at step 1 unless it is
  the warm-up below), per-step host syncs, CPU/device mixing,
  CUDA left in a port, a run in which no tensor reached the neuron device, parity mismatch;
- warning (fails only with ``--strict``): graph breaks without ``fullgraph``, float64 on the device,
  a region recompiled at step 1 only (at most twice, and stable in steps 2.. of a run of >= 3 steps),
  ``torch.compile`` options TorchNeuron ignores;
- unverified (fails only with ``--strict``): graphs whose only failures are known upstream gaps.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from typing import Any

from porter.check import gaps, source
from porter.check.report import (
    EMULATED_TARGET_NAME,
    ERROR,
    INFO,
    UNVERIFIED,
    WARNING,
    Crash,
    Finding,
    GraphInfo,
    Padding,
    ShapeSummary,
    Stage,
)
from porter.check.runner import RunResult

# The porter rule that addresses each kind of finding (``porter explain CODE`` says how).
RULE_DEVICE = "NRN101"
RULE_CUDA_METHOD = "NRN102"
RULE_CUDA_NAMESPACE = "NRN103"
RULE_AUTOCAST = "NRN201"
RULE_GRAD_SCALER = "NRN204"
RULE_COMPILE = "NRN401"  # compile(..., dynamic=False): symbolic sizes
RULE_HOST_SYNC = "NRN606"  # a host sync left on the per-step path
RULE_HOST_SYNC_CONTROL = "NRN602"  # a per-step sync feeding control flow (``if loss > x``)
RULE_STATIC_BATCH = "NRN701"  # drop_last: a new batch shape recompiles
RULE_FLOAT64 = "NRN721"
RULE_COMPILE_INSERT = "NRN411"  # a training step with no torch.compile
RULE_COMPILE_HAZARD = "NRN731"  # graph breaks, ops that do not lower

DEVICE_ENV = {
    "TORCH_NEURONX_DEBUG_DIR": "/tmp/neuron_backend  (FX graphs, StableHLO, NEFFs of every compile)",
    "TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS": "1  (keep them after the run)",
    "NEURON_CC_FLAGS": "--model-type=transformer  (for transformer models)",
}


def _rel(path: str | None, base: str) -> str | None:
    if not path:
        return path
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _peer_failure(record: dict[str, Any]) -> bool:
    message = str((record.get("error") or {}).get("message", ""))
    return "Connection closed by peer" in message or "remote worker" in message


def _library(path: str | None) -> bool:
    if not path:
        return False
    return "site-packages" in path or "dist-packages" in path


def _package_path(path: str) -> str:
    """A library file named from its package down (``torchrl/objectives/utils.py``)."""
    norm = path.replace(os.sep, "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in norm:
            return norm.rsplit(marker, 1)[1]
    return norm


def _own_site(file: str | None, line: int | None, via: Any) -> tuple[str | None, int | None, str]:
    """Where a finding is named: a library's file and line become the script's own line that called
    into it (``via``: the innermost frame outside site-packages), with the library's line said in
    the returned message suffix. The script's line is the one its author can change or mark."""
    if not _library(file) or not via or _library(str(via[0])):
        return file, line, ""
    text = source.source_line(file, line)
    quoted = f" `{text}`" if text else ""
    return str(via[0]), int(via[1]), f", inside a library this line calls: {_package_path(str(file))}:{line}{quoted}"


def losses_by_step(record: dict[str, Any] | None) -> tuple[float | None, ...]:
    """Mean of the losses ``.backward()`` saw in each optimizer step (grad accumulation averages)."""
    if not record:
        return ()
    per: dict[int, list[float]] = defaultdict(list)
    for step, value in record.get("losses", []):
        per[int(step)].append(float(value))
    if not per:
        return ()
    last = max(per)
    return tuple((sum(per[s]) / len(per[s])) if per.get(s) else None for s in range(last + 1))


def crash_of(result: RunResult, script: str) -> Crash | None:
    """The script's crash or timeout, mapped to its innermost frame in the user's own files."""
    if result.timed_out:
        return Crash(kind="timeout", message="the script did not finish its steps before the timeout")
    record = result.record
    for rank_record in result.ranks[1:]:
        # in a distributed run, rank 0 often dies of its peer's crash: show the root cause
        if record and record.get("status") == "crashed" and _peer_failure(record) and rank_record \
                and rank_record.get("status") == "crashed" and not _peer_failure(rank_record):
            record = rank_record
    if record is None:
        return Crash(
            kind="harness",
            message=f"the check's subprocess ended without a result (exit status {result.returncode})",
            traceback=result.stderr[-4000:],
        )
    if record.get("status") != "crashed":
        return None
    error = record.get("error") or {}
    frames = error.get("frames", [])
    script_dir = os.path.dirname(os.path.abspath(script)) + os.sep
    pick = None
    for frame in frames:
        if frame["file"].startswith(script_dir):
            pick = frame
    if pick is None:
        for frame in frames:
            if "site-packages" not in frame["file"] and not frame["file"].startswith("<") and "/porter/check/" not in frame["file"]:
                pick = frame
    raised = [b for b in record.get("graph_breaks", []) if b.get("raised")]
    if raised and raised[-1].get("line"):
        pick = {"file": raised[-1]["file"], "line": raised[-1]["line"]}  # where Dynamo stopped, not the call
    text = error.get("text", "")
    message = f"{error.get('type')}: {error.get('message')}"
    if error.get("type") == "SystemExit":
        # sys.exit(N) carries no traceback worth showing: the script's own last words are on stderr,
        # often a traceback it printed before exiting (Hydra's run_and_report): that one is the cause
        text = "stderr (tail):\n" + (result.stderr[-3000:] or "(empty)")
        printed = _printed_traceback(result.stderr)
        if printed is not None:
            block, printed_raised, where = printed
            text = "stderr (the traceback the script printed before it exited):\n" + block
            message += f", after printing {printed_raised}" if printed_raised else ""
            if where is not None and (pick is None or not pick["file"].startswith(script_dir) or where["file"].startswith(script_dir)):
                pick = where
    return Crash(
        kind="exception",
        message=message,
        file=pick["file"] if pick else None,
        line=pick["line"] if pick else None,
        traceback=text,
    )


_RAISED = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)\b.*)$", re.M)
_FRAME = re.compile(r'^  File "([^"]+)", line (\d+)', re.M)


def _printed_traceback(stderr: str) -> tuple[str, str | None, dict[str, Any] | None] | None:
    """The last traceback on stderr (shortened), the exception line it ends with, and its last
    frame outside libraries; None when stderr shows none."""
    start = stderr.rfind("Traceback (most recent call last):")
    if start < 0:
        return None
    block = stderr[start:]
    raised = _RAISED.search(block)
    frames = [{"file": f, "line": int(n)} for f, n in _FRAME.findall(block[: raised.start()] if raised else block)
              if "site-packages" not in f and not f.startswith("<") and "/porter/check/" not in f]
    shown = block if len(block) <= 3000 else block[:2000] + "\n[...]\n" + block[-1000:]
    return shown, (raised.group(1)[:300] if raised else None), (frames[-1] if frames else None)


def findings_of(record: dict[str, Any], script: str, role: str = "port") -> list[Finding]:
    """Every finding the raw record supports, mapped to source lines."""
    base = os.path.dirname(os.path.abspath(script))
    out: list[Finding] = []
    # A graph break under fullgraph=True raises where the backend honours it (the emulated one) and
    # the run stops there: in a run that went on, every logged break came from a region compiled
    # without it (torchrl's collector asks fullgraph for its policy, the script's update does not).
    # Where breaks are reported rather than raised (the device target), any may be a fullgraph region's.
    crashed = record.get("status") == "crashed"
    fullgraph = any(c.get("fullgraph") and (c.get("fullgraph_reported", True) or crashed)
                    for c in record.get("compile_calls", []))

    # -- host syncs ----------------------------------------------------------------------------------
    per_line: dict[tuple[str, int, str, str], dict[str, Any]] = {}
    for sync in record.get("syncs", []):
        if sync["step"] < 1:
            continue
        stack = [tuple(f) for f in sync.get("stack", [])] or [(sync["file"], sync["line"])]
        if _excused(record, sync, stack):
            continue
        own = next((f for f in stack if not _library(str(f[0]))), None)
        file, line, inside = _own_site(sync["file"], sync["line"], own)
        key = (str(file), int(line or 0), sync["kind"], inside)
        entry = per_line.setdefault(key, {"count": 0, "steps": set(), "marker": source.review_marker(stack)})
        entry["count"] += sync["count"]
        entry["steps"].add(sync["step"])
    after_warmup = set(range(1, int(record.get("steps") or 0)))
    for (file, line, kind, inside), entry in sorted(per_line.items()):
        steps = sorted(entry["steps"])
        marker = f"; its marker `{entry['marker']}` asks for a fix, it does not excuse the sync" if entry["marker"] else ""
        # "every step" only when it was seen at every step after warm-up; else the steps it ran at
        listed = ", ".join(map(str, steps))
        when = (f"every step (steps {listed}) outside a logging interval" if after_warmup <= set(steps) else
                f"at step{'s' if len(steps) > 1 else ''} {listed} of steps {min(after_warmup)}-{max(after_warmup)}, "
                "outside a logging interval (not every step: an outer loop or a condition porter does not read "
                "as an interval)")
        out.append(
            Finding(
                kind="host-sync",
                severity=ERROR,
                message=f"host sync `{kind}` {when}{inside}{marker}",
                file=_rel(file, base),
                line=line,
                rule=RULE_HOST_SYNC_CONTROL if kind == "__bool__" else RULE_HOST_SYNC,
                count=entry["count"],
                detail=source.source_line(file, line) or None,
            )
        )

    # -- graph breaks and recompiles -----------------------------------------------------------------
    seen_breaks: dict[tuple[Any, Any, str, str], int] = defaultdict(int)
    for brk in record.get("graph_breaks", []):
        file, line, inside = _own_site(brk.get("file"), brk.get("line"), brk.get("via"))
        seen_breaks[(file, line, brk.get("reason", ""), inside)] += 1
    for (file, line, reason, inside), count in seen_breaks.items():
        out.append(
            Finding(
                kind="graph-break",
                severity=ERROR if fullgraph else WARNING,
                message=("graph break (under a fullgraph=True request)" if fullgraph else "graph break")
                + f"{inside}: {reason}",
                file=_rel(file, base),
                line=line,
                rule=RULE_COMPILE_HAZARD,
                count=count,
                detail=source.source_line(file, line) or None,
            )
        )
    out.extend(_recompile_findings(record.get("recompiles", []), int(record.get("steps") or 0), base,
                                   _first_compiled(record.get("graphs", []))))

    # -- graphs: lowering, symbolic shapes -----------------------------------------------------------
    for graph in record.get("graphs", []):
        if graph.get("symbolic"):
            # the line that called the compiled code (the call whose sizes changed), the script's
            # own when that call is a library's
            call_file, call_line, _ = _own_site(graph.get("call_file"), graph.get("call_line"), graph.get("call_via"))
            out.append(
                Finding(
                    kind="symbolic-shape",
                    severity=ERROR,
                    message=f"{graph['kind']} graph of {graph['region']} has symbolic sizes "
                    f"({'; '.join(graph['symbolic'][:4])}): TorchNeuron requires static shapes",
                    file=_rel(call_file, base) if call_line else None,
                    line=call_line or None,
                    rule=RULE_COMPILE,
                )
            )
        if graph.get("status") == "failed":
            for op in graph.get("failed_ops", []):
                if gaps.is_known_gap(op["op"]):
                    continue
                where = f" in {op['module']}" if op.get("module") else ""
                out.append(
                    Finding(
                        kind="lowering",
                        severity=ERROR,
                        message=f"`{op['op']}`{where} does not lower to StableHLO ({graph['kind']} graph of {graph['region']})",
                        file=_rel(op.get("file"), base),
                        line=op.get("line"),
                        rule=RULE_COMPILE_HAZARD,
                        detail=(op.get("error") or "").splitlines()[0][:300] if op.get("error") else None,
                    )
                )
        elif graph.get("status") == "unverified" and graph.get("exceeded"):
            for op in graph.get("failed_ops", []):
                out.append(
                    Finding(
                        kind="not-verified",
                        severity=UNVERIFIED,
                        message=f"{graph['kind']} graph of {graph['region']} not verified: lowering `{op['op']}` exceeded "
                        f"the lowering step's {graph['exceeded']} budget ({op.get('error') or graph.get('error')})",
                        file=_rel(op.get("file"), base),
                        line=op.get("line"),
                        rule=RULE_COMPILE_HAZARD,
                    )
                )
        elif graph.get("status") == "unverified":
            ops = sorted({op["op"] for op in graph.get("failed_ops", [])})
            out.append(
                Finding(
                    kind="not-verified",
                    severity=UNVERIFIED,
                    message=f"{graph['kind']} graph of {graph['region']} not verified by the emulated front end: "
                    f"known upstream torch-mlir gap ({', '.join(ops)}); TorchNeuron lowers it in its own fork",
                    rule=None,
                )
            )

    # -- placements, CUDA, dtype, mixing -------------------------------------------------------------
    for use in record.get("cuda_uses", []):
        api = use["api"]
        if _library(use["file"]):
            continue  # transformers/accelerate probing torch.cuda: their Trainium branch, not the port's
        rule = RULE_CUDA_METHOD if api.startswith("placement") else (
            RULE_AUTOCAST if "autocast" in api else RULE_GRAD_SCALER if "GradScaler" in api else RULE_CUDA_NAMESPACE
        )
        out.append(_counted("cuda", ERROR, f"CUDA left in the port: {api} (no CUDA on Trainium)", use, rule, base))
    for f64 in record.get("float64", []):
        message = f"float64 tensor on the neuron device ({f64['op']}): Neuron casts 64-bit types to 32-bit"
        out.append(_counted("float64", WARNING, message, f64, RULE_FLOAT64, base))
    for entry in record.get("fused_scaler", []):
        message = (f"GradScaler steps a fused {entry['optimizer']}: Neuron's fused AdamW ignores grad_scale and "
                   "found_inf, so updates are unscaled and overflow steps are not skipped (use bf16 without a "
                   "scaler, or fused=False)")
        out.append(_counted("grad-scaler-fused", ERROR, message, entry, RULE_GRAD_SCALER, base))
    for mix in record.get("mixing", []):
        message = f"{mix['op']} mixes CPU and neuron tensors (fails on a real device)"
        out.append(_counted("device-mixing", ERROR, message, mix, RULE_DEVICE, base))
    for call in record.get("compile_calls", []):
        if role != "port":
            continue
        problems = []
        if call.get("backend") != "neuron" and call.get("host_module"):
            problems.append(("compile-backend-host", WARNING, f"torch.compile backend={call.get('backend')!r} of a module whose "
                             "tensors are all on the CPU: it compiles for the host CPU, on a Trainium host too"))
        elif call.get("backend") != "neuron":
            problems.append(("compile-backend", ERROR, f"torch.compile backend={call.get('backend')!r}: TorchNeuron compiles with backend='neuron' (checked with it here)"))
        if call.get("dynamic") is True:
            problems.append(("compile-dynamic", ERROR, "torch.compile(dynamic=True) is rejected by TorchNeuron"))
        if call.get("mode") not in (None, "default"):
            problems.append(("compile-mode", WARNING, f"torch.compile(mode={call.get('mode')!r}) is ignored by TorchNeuron (falls back to default)"))
        for kind, severity, message in problems:
            out.append(Finding(kind=kind, severity=severity, message=message, file=_rel(call["file"], base), line=call["line"], rule=RULE_COMPILE))
    if role == "port" and record.get("status") != "crashed" and not record.get("reached_device"):
        out.append(
            Finding(
                kind="no-device",
                severity=ERROR,
                message="no tensor reached the neuron device: the port never got there",
                rule=RULE_DEVICE,
            )
        )
    return out


def _excused(record: dict[str, Any], sync: dict[str, Any], stack: list[tuple[Any, ...]]) -> str | None:
    """Why a sync after step 0 is not a per-step sync: a logging interval, a deliberate-sync marker,
    or the script's own eager warm-up: it ran in a function the script hands to torch.compile only
    at a later step (torchrl's compile_with_warmup calls it eagerly first), a step the run went past
    with a graph compiled from then on. The same line syncing at or after that step is still a
    finding."""
    why = source.excused(stack)
    if why:
        return why
    steps = int(record.get("steps") or 0)
    for call in record.get("compile_calls", []):
        code, at = call.get("code"), call.get("step")
        if not code or at is None or sync["step"] >= at or at >= steps:
            continue  # not before the compile, or no step after it to show the sync gone
        if not any(int(graph.get("step") or 0) >= at for graph in record.get("graphs", [])):
            continue  # nothing was compiled from then on: the function may still run eagerly
        if any(other.get("code") == code and other.get("step") is not None and other["step"] <= sync["step"]
               for other in record.get("compile_calls", [])):
            continue  # the same code was compiled already when it synced (a compile in the loop, a recompile)
        file, first, last = code
        if any(str(f[0]) == file and first <= int(f[1]) <= last for f in stack):
            return (f"eager warm-up: the function at {os.path.basename(file)}:{first} runs eagerly until the script "
                    f"compiles it at step {at}")
    return None


def excused_syncs(record: dict[str, Any], script: str) -> tuple[dict[str, Any], ...]:
    """Every per-step sync (step >= 1) that is not a finding, with the reason: a logging interval
    or the deliberate-sync marker that covers it."""
    base = os.path.dirname(os.path.abspath(script))
    per: dict[tuple[Any, ...], int] = defaultdict(int)
    for sync in record.get("syncs", []):
        if sync["step"] < 1:
            continue
        stack = [tuple(f) for f in sync.get("stack", [])] or [(sync["file"], sync["line"])]
        why = _excused(record, sync, stack)
        if why:
            per[(sync["file"], sync["line"], sync["kind"], why)] += sync["count"]
    return tuple(
        {"file": _rel(file, base), "line": line, "kind": kind, "reason": why, "count": n}
        for (file, line, kind, why), n in sorted(per.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))
    )


# Recompile policy. A compiled region is built at its first call (step 0). One built again at its
# second step (step 1) and never after is warm-up: a guard on state the first call set (torchrl's
# losses set their in_keys lazily, tensordict swaps parameters in), one extra graph compile on
# Neuron, not a compile per step. It is a warning, and only when the run went on long enough to see
# it stable (steps 2.. compiled that region nothing new) and it happened at most WARMUP_RECOMPILES
# times for that region. Any recompile at step >= 2 is instability: an error.
# A region first compiled later (a collector's policy, first called once its random frames are
# collected) has its warm-up counted from there: its recompiles at that step and the next are
# warm-up, under the same bound, and the step after them must compile it nothing new.
WARMUP_STEP = 1
WARMUP_RECOMPILES = 2
MIN_STEPS_STABLE = WARMUP_STEP + 2  # steps 0..2 run: step 2 is the first one that shows it stable
_COMPILE_FRAME = re.compile(r"^(\d+)/\d+:")  # a guard's compile id: frame N, entry M


def _first_compiled(graphs: list[dict[str, Any]]) -> dict[str, int]:
    """The step each Dynamo frame (the N of compile id N/M) was first compiled at."""
    first: dict[str, int] = {}
    for graph in graphs:
        frame = str(graph.get("compile_id", "")).split("/")[0]
        if frame.isdigit():
            first[frame] = min(first.get(frame, int(graph.get("step") or 0)), int(graph.get("step") or 0))
    return first


def _late_start(rec: dict[str, Any], first: dict[str, int]) -> int:
    """The step the recompiled frame was first compiled at when after step 0 (the guard's compile id
    names it), else 0."""
    match = _COMPILE_FRAME.match(str(rec.get("reason", "")))
    return first.get(match.group(1), 0) if match else 0


def _in_warmup(step: int, start: int) -> bool:
    """Step 1 for a region first compiled at step 0; its first step and the next for one compiled later."""
    return start <= step <= start + WARMUP_STEP if start else step == WARMUP_STEP


def _recompile_findings(recompiles: list[dict[str, Any]], steps_run: int, base: str,
                        first: dict[str, int] | None = None) -> list[Finding]:
    """Findings for Dynamo's recompiles under the policy above (mode switches compiled once are info)."""
    first = first or {}
    out: list[Finding] = []
    late = {rec.get("function"): start for rec in recompiles if (start := _late_start(rec, first)) > 0}
    grad_mode_switches: dict[tuple[Any, str], int] = defaultdict(int)
    # frames recompiled during a compiled function's first call: shared by two compiled functions
    shared_frames = {rec.get("function") for rec in recompiles
                     if rec.get("step", 0) >= 1 and rec.get("first_call") and not _mode_switch(str(rec.get("reason", "")))}
    unstable = {rec.get("function") for rec in recompiles
                if rec.get("step", 0) > late.get(rec.get("function"), 0) + WARMUP_STEP
                and not _mode_switch(str(rec.get("reason", "")))
                and rec.get("function") not in shared_frames}
    at_warmup: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    shared: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for rec in recompiles:
        step, reason = rec.get("step", 0), str(rec.get("reason", ""))
        if step >= 1 and rec.get("function") in shared_frames and not _mode_switch(reason):
            shared[rec.get("function")].append(rec)
            continue
        severity = ERROR if step >= 1 else INFO
        what = "recompile after warm-up" if step >= 1 else "recompile during warm-up"
        switch = _mode_switch(reason)
        if switch:
            # Training <-> evaluation switch (no_grad, or model.eval() flipping `.training`) or a
            # bool argument's other value: one graph per value and region, compiled once and cached
            # (Dynamo keeps both entries); only a second compile of the same region for the same
            # switch is instability.
            grad_mode_switches[(rec.get("function"), switch)] += 1
            if grad_mode_switches[(rec.get("function"), switch)] == 1:
                what = (f"graph for the other value of {switch.split()[1]} (a bool: one graph per value, compiled once)"
                        if switch.startswith("bool ") else f"evaluation graph ({switch} switch, compiled once)")
                severity = INFO
        elif _in_warmup(step, late.get(rec.get("function"), 0)):
            at_warmup[rec.get("function")].append(rec)
            continue
        out.append(_recompile(rec, severity, what + f" (step {step}) of {rec.get('function')}: {reason}", base))
    for function, recs in at_warmup.items():
        n, reasons = len(recs), "; ".join(dict.fromkeys(str(r.get("reason", "")) for r in recs))
        start = late.get(function, 0)
        last = start + WARMUP_STEP
        when = (f"steps {start}-{last}, from its first compile at step {start}" if start else f"step {WARMUP_STEP}")
        if function in unstable:
            why = f"recompiled again at step >= {last + 1}: not stable"
        elif n > WARMUP_RECOMPILES:
            why = f"more than the warm-up bound of {WARMUP_RECOMPILES}"
        elif steps_run < start + MIN_STEPS_STABLE:
            why = (f"only {steps_run} step(s) run: --steps {start + MIN_STEPS_STABLE} or more shows whether it is "
                   "warm-up only")
        else:
            out.append(_recompile(recs[0], WARNING, f"recompiled {n} time(s) during warm-up ({when}), stable "
                                  f"after (steps {last + 1}-{steps_run - 1} compiled nothing new) of {function}: {reasons}",
                                  base, kind="warm-up-recompile", count=n))
            continue
        out.extend(_recompile(r, ERROR, f"recompile after warm-up ({when}; {why}) of {function}: "
                              f"{r.get('reason', '')}", base) for r in recs)
    out.extend(_shared_frame_findings(shared, steps_run, base))
    return out


# A frame two compiled functions share (one optimizer stepped by torchrl's update_qloss and update_all)
# is compiled for each (Dynamo guards the torch.compile call's backend object), and the state the
# second one's first call builds (optimizer state for the parameters only it updates) makes the first
# one's next call compile it once more: at most SHARED_RECOMPILES per compiled function that calls it,
# whatever step the second one first runs at. Warm-up (a warning) when within that bound and
# SHARED_QUIET_STEPS steps ran after the last recompile with nothing new compiled for the frame.
SHARED_RECOMPILES = 2
SHARED_QUIET_STEPS = 2


def _shared_frame_findings(shared: dict[Any, list[dict[str, Any]]], steps_run: int, base: str) -> list[Finding]:
    """Findings for the recompiles of frames recompiled during a compiled function's first call
    (harness/patches.py's ``_first_call_tracked`` names the caller), under the policy above."""
    out: list[Finding] = []
    for function, recs in shared.items():
        firsts = list(dict.fromkeys(str(r["first_call"]) for r in recs if r.get("first_call")))
        callers = set(firsts) | {str(r["caller"]) for r in recs if r.get("caller")}
        last = max(int(r.get("step", 0)) for r in recs)
        steps = ", ".join(str(n) for n in dict.fromkeys(int(r.get("step", 0)) for r in recs))
        reasons = "; ".join(dict.fromkeys(str(r.get("reason", "")) for r in recs))
        what = (f"compiled again for the first call of {', '.join(firsts)} (steps {steps}): a frame a compiled "
                "function called before shares")
        if None in {r.get("caller") for r in recs}:
            why = "recompiled outside a compiled function's call too: not stable"
        elif len(recs) > SHARED_RECOMPILES * len(callers):
            why = f"{len(recs)} recompiles, more than {SHARED_RECOMPILES} for each of its {len(callers)} caller(s)"
        elif steps_run < last + 1 + SHARED_QUIET_STEPS:
            why = (f"only {steps_run} step(s) run: {SHARED_QUIET_STEPS} steps after step {last} show whether it "
                   "is stable")
        else:
            out.append(_recompile(recs[0], WARNING, f"{what}; stable after (steps {last + 1}-{steps_run - 1} compiled "
                                  f"nothing new) of {function}: {reasons}", base, kind="warm-up-recompile",
                                  count=len(recs)))
            continue
        out.extend(_recompile(r, ERROR, f"recompile after warm-up ({what}; {why}) of {function}: {r.get('reason', '')}", base)
                   for r in recs)
    return out


def _recompile(rec: dict[str, Any], severity: str, message: str, base: str, kind: str = "recompile", count: int = 1) -> Finding:
    reason = str(rec.get("reason", ""))
    file, line, inside = _own_site(rec.get("file"), rec.get("line"), rec.get("via"))
    return Finding(kind=kind, severity=severity, message=message + inside, file=_rel(file, base), line=line,
                   rule=RULE_STATIC_BATCH if "size" in reason else RULE_COMPILE_HAZARD, count=count)


# A guard failure on a module's `training` flag only (Dynamo's text: "0/0: self._modules['x'].training
# == True" or "L['self'].training == True"): model.eval()/model.train() between calls.
_TRAINING_GUARD = re.compile(r"^\S+: \S*training == (True|False)\s*(#.*)?$")
# A guard failure on a bool only ("6/0: update_actor == True", "0/0: L['flag'] == False"): a function
# called with a bool argument (td3's update(batch, update_actor)) gets one graph per value. A bool has
# two values, so the region compiles once more and never again for it: bounded like a mode switch.
_BOOL_GUARD = re.compile(r"^\S+: (\S+) == (True|False)\s*(#.*)?$")


def _mode_switch(reason: str) -> str | None:
    """'grad mode' / 'train/eval mode' / 'bool X' when a recompile's only failed guard is such a switch."""
    text = reason.strip()
    if "GLOBAL_STATE changed: grad_mode" in text and ";" not in text:
        return "grad mode"
    if _TRAINING_GUARD.match(text):
        return "train/eval mode"
    found = _BOOL_GUARD.match(text)
    if found:
        return f"bool {found.group(1)}"
    return None


def graphs_of(record: dict[str, Any]) -> tuple[GraphInfo, ...]:
    return tuple(
        GraphInfo(
            graph_id=g["graph_id"],
            region=g["region"],
            kind=g["kind"],
            compile_id=g["compile_id"],
            step=g["step"],
            nodes=g["nodes"],
            input_shapes=tuple(tuple(s) if isinstance(s, list) else str(s) for s in g.get("dynamo_input_shapes", [])),
            lowered=g.get("lowered"),
            status=g.get("status", "not-run"),
            error=g.get("error"),
            failed_ops=tuple(sorted({op["op"] for op in g.get("failed_ops", [])})),
            symbolic=tuple(g.get("symbolic", [])),
            bisect="; ".join(
                f"{op['op']} in {op.get('module') or '?'} ({os.path.basename(op.get('file') or '?')}:{op.get('line')})"
                for op in g.get("failed_ops", [])
            )
            or None,
        )
        for g in record.get("graphs", [])
    )


def shapes_of(record: dict[str, Any]) -> tuple[ShapeSummary, ...]:
    per: dict[str, list[str]] = defaultdict(list)
    for g in record.get("graphs", []):
        if g["kind"] == "backward":
            continue
        text = ", ".join("x".join(map(str, s)) if isinstance(s, list) else str(s) for s in g.get("dynamo_input_shapes", []))
        if text not in per[g["region"]]:
            per[g["region"]].append(text)
    return tuple(ShapeSummary(region=r, shapes=tuple(s)) for r, s in per.items())


def padding_of(record: dict[str, Any]) -> Padding | None:
    tokens = int(record.get("tokens", 0))
    if not tokens:
        return None
    sources = tuple(record.get("padding_sources") or ("attention_mask",))
    return Padding(tokens=tokens, padded=int(record.get("padded_tokens", 0)), sources=sources)


def stages_of(record: dict[str, Any] | None, target: str) -> tuple[Stage, ...]:
    graphs = (record or {}).get("graphs", [])
    compiled = bool(graphs) or bool((record or {}).get("dynamo_metrics"))
    if target == "device":
        return (
            Stage("Dynamo", compiled, "real TorchNeuron"),
            Stage("AOTAutograd", compiled, "real TorchNeuron"),
            Stage("StableHLO lowering", compiled, "TorchNeuron's torch-mlir fork"),
            Stage("neuronx-cc / NEFF", compiled, "on the device"),
            Stage("Neuron runtime", bool(record and record.get("reached_device")), "on the device"),
        )
    lowered = sum(1 for g in graphs if g.get("lowered"))
    return (
        Stage("Dynamo", compiled, f"{len({g['compile_id'] for g in graphs})} compiled region(s)" if compiled else "no torch.compile region ran"),
        Stage("AOTAutograd", compiled, f"{len(graphs)} graph(s) (forward/backward)" if compiled else ""),
        Stage("StableHLO lowering", compiled, f"upstream torch-mlir: {lowered}/{len(graphs)} graph(s) lowered" if compiled else ""),
        Stage("neuronx-cc / NEFF", False, "not run: no Neuron compiler here"),
        Stage("Neuron runtime", False, "not run: graphs executed eagerly on the CPU"),
    )


def placements_of(record: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for p in record.get("placements", []):
        out[f"{p['requested']} -> {p['resolved']}" + (" (emulated)" if p["requested"] in ("neuron", "cuda") else "")] += p["count"]
    return dict(out)


def syncs_per_step(record: dict[str, Any], steps: int) -> dict[str, float]:
    """Host syncs per step after warm-up: all of them, and those that are findings."""
    later = [s for s in record.get("syncs", []) if s["step"] >= 1]
    n = max(1, steps - 1) if steps > 1 else 1
    total = sum(s["count"] for s in later)
    unexcused = sum(
        s["count"] for s in later if not _excused(record, s, [tuple(f) for f in s.get("stack", [])] or [(s["file"], s["line"])])
    )
    warmup = sum(s["count"] for s in record.get("syncs", []) if s["step"] == 0)
    return {"warm-up (step 0)": float(warmup), "per step (steps >= 1, all)": total / n, "per step (findings)": unexcused / n}


def target_description(target: str) -> str:
    if target == "device":
        return "TorchNeuron on a Neuron device (torch-neuronx, backend='neuron')"
    return EMULATED_TARGET_NAME


def _counted(kind: str, severity: str, message: str, entry: dict[str, Any], rule: str, base: str) -> Finding:
    """A finding for a harness record entry that carries ``file``, ``line`` and ``count`` (and
    ``via``, the script's own line, where the entry's line is a library's)."""
    file, line, inside = _own_site(entry["file"], entry["line"], entry.get("via"))
    return Finding(
        kind=kind,
        severity=severity,
        message=message + inside,
        file=_rel(file, base),
        line=line,
        rule=rule,
        count=entry["count"],
        detail=source.source_line(file, line) or None,
    )
