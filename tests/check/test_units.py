"""Fast unit tests: source classification of syncs, the report model, the CLI surface."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from porter.check import analyze, source
from porter.check.report import ERROR, UNVERIFIED, WARNING, CheckReport, Finding, Padding
from porter.cli import main

LOOP = """\
for step in range(10):
    loss = f()
    if step % 10 == 0:
        print(loss.item())
        log(loss)
    # porter: NRN602 .item() feeds control flow; runs a host sync every step
    if loss.item() > 3:
        break
    total += loss.item()
"""


def test_interval_and_marker_lines(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(LOOP)
    assert source.interval_lines(str(path)) == frozenset({4, 5})
    assert source.marked(str(path), 7) and not source.marked(str(path), 9)
    assert source.excused([(str(path), 4)]) == "logging interval"
    assert source.excused([(str(path), 7)]) == "marked deliberate: porter: NRN602 .item() feeds control flow; runs a host sync every step"
    assert source.excused([(str(path), 9)]) is None
    # a sync in a helper called from the logging branch is excused through its caller's line
    assert source.excused([("/elsewhere/helper.py", 3), (str(path), 5)]) == "logging interval"


def test_a_test_interval_by_floor_division_is_a_logging_interval(tmp_path: Path) -> None:
    """torchrl's scripts evaluate when the frame count crosses a multiple of test_interval: the
    comparison of two floor divisions, written out or through the names they were assigned to."""
    path = tmp_path / "loop.py"
    path.write_text(
        "def main(cfg, n):\n"
        "    for i, data in enumerate(collector):\n"
        "        prev = ((i - 1) * n) // cfg.test_interval\n"
        "        cur = (i * n) // cfg.test_interval\n"
        "        if prev < cur or final:\n"
        "            evaluate(data).item()\n"                      # 6
        "        if ((i - 1) * n) // every < (i * n) // every:\n"
        "            evaluate(data).item()\n"                      # 8
        "        if len(data) // 2 > 3:\n"                          # one side only: not an interval
        "            evaluate(data).item()\n"                      # 10
        "        if prev > 0:\n"                                    # a counter against a constant
        "            evaluate(data).item()\n"                      # 12
    )
    assert source.interval_lines(str(path)) == frozenset({6, 8})
    # a name assigned a floor division in another function is not this one's counter
    other = tmp_path / "other.py"
    other.write_text("def f(n):\n    prev = n // 2\n    cur = n // 3\n\ndef g(prev, cur):\n    if prev < cur:\n        x.item()\n")
    assert source.interval_lines(str(other)) == frozenset()


def test_a_fix_this_marker_excuses_no_sync(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(
        "for step in range(9):\n"
        "    # porter: NRN606 loss.item() syncs with the host every step; keep it on device or read it every N steps\n"
        "    log(loss.item())\n"
        "    # porter: NRN607 per-step print syncs with the host; add a step counter and run it every N steps\n"
        "    print(loss.item())\n"
        "    x = loss.item()  # porter: NRN699 checked at a logging interval by hand\n"
    )
    assert source.excused([(str(path), 3)]) is None and source.excused([(str(path), 5)]) is None
    assert source.review_marker([(str(path), 3)]).startswith("porter: NRN606")
    assert source.excused([(str(path), 6)]) == "marked deliberate: porter: NRN699 checked at a logging interval by hand"


def test_per_step_syncs_only_after_warmup_and_unexcused(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(LOOP)
    record = {
        "syncs": [
            {"kind": "item", "file": str(path), "line": 9, "stack": [[str(path), 9]], "step": 0, "count": 1},
            {"kind": "item", "file": str(path), "line": 9, "stack": [[str(path), 9]], "step": 1, "count": 1},
            {"kind": "item", "file": str(path), "line": 9, "stack": [[str(path), 9]], "step": 2, "count": 1},
            {"kind": "item", "file": str(path), "line": 4, "stack": [[str(path), 4]], "step": 2, "count": 1},
            {"kind": "item", "file": str(path), "line": 7, "stack": [[str(path), 7]], "step": 2, "count": 1},
        ],
        "reached_device": True,
    }
    found = analyze.findings_of(record, str(path))
    assert [(f.kind, f.line, f.count, f.severity) for f in found] == [("host-sync", 9, 2, ERROR)]
    rates = analyze.syncs_per_step(record, 3)
    assert rates["warm-up (step 0)"] == 1 and rates["per step (findings)"] == 1.0
    excused = analyze.excused_syncs(record, str(path))
    assert [(e["line"], e["reason"].split(":")[0]) for e in excused] == [(4, "logging interval"), (7, "marked deliberate")]


def test_report_is_json_serialisable_and_strict_widens_failures() -> None:
    report = CheckReport(
        script="x.py", target="emulated", target_description="d", steps_requested=3, steps_run=3, exit_code=0,
        verdict="compiled", findings=(Finding("float64", WARNING, "m"), Finding("not-verified", UNVERIFIED, "g")),
        padding=Padding(tokens=10, padded=4),
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["padding"]["fraction"] == pytest.approx(0.4)
    assert report.failing() == ()
    assert len(report.failing(strict=True)) == 2
    with pytest.raises(AttributeError):
        report.exit_code = 1  # type: ignore[misc]


def test_help_explains_options_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--help"]) == 0
    text = capsys.readouterr().out
    for option in ("--steps", "--target", "--against", "--timeout", "--json", "--nproc", "--dump", "--bisect", "--strict"):
        assert option in text
    assert "Exit codes" in text and "upstream torch-mlir approximation" in text


def test_missing_script_is_a_usage_error() -> None:
    assert main(["check", "/nonexistent/train.py"]) == 2


def test_first_eval_grad_mode_compile_is_not_a_recompile_failure() -> None:
    def rec(step: int, reason: str) -> dict:
        return {"function": "forward", "file": "/x/train.py", "line": 9, "reason": reason, "step": step}

    record = {
        "reached_device": True,
        "recompiles": [rec(3, "0/0: GLOBAL_STATE changed: grad_mode "), rec(5, "0/1: tensor 'x' size mismatch at index 0")],
    }
    severities = [(f.severity, f.message.split(" (")[0]) for f in analyze.findings_of(record, "/x/train.py")]
    assert severities == [
        ("info", "evaluation graph"),
        ("error", "recompile after warm-up"),
    ]


def test_first_train_eval_flag_compile_is_not_a_recompile_failure() -> None:
    """model.eval() between steps (pyGAT validates every epoch with grad on): Dynamo's guard on
    `.training` fails once, the eval graph is cached; a second such compile is instability."""
    def rec(step: int, reason: str) -> dict:
        return {"function": "forward", "file": "/x/train.py", "line": 9, "reason": reason, "step": step}

    flag = "0/0: self._modules['out_att'].training == True                # kwargs = kwargs or {}  # x.py:110 in f"
    record = {"reached_device": True, "recompiles": [rec(1, flag), rec(2, "0/1: L['self'].training == False"),
                                                     rec(3, flag.replace("0/0", "0/2"))]}
    severities = [(f.severity, f.message.split(" (")[0]) for f in analyze.findings_of(record, "/x/train.py")]
    assert severities == [("info", "evaluation graph"), ("error", "recompile after warm-up"),
                          ("error", "recompile after warm-up")]
    # a size guard next to the flag is not a mode switch
    mixed = {"reached_device": True, "recompiles": [rec(1, "0/0: L['self'].training == True; tensor 'x' size mismatch")]}
    assert [f.severity for f in analyze.findings_of(mixed, "/x/train.py")] == ["error"]


def test_first_compile_for_a_bools_other_value_is_not_a_recompile_failure() -> None:
    """td3's update(batch, update_actor): the actor's half first runs at step 3, its resume frame
    guarded on the bool compiles once for True; a second compile for that bool, or an int's new
    value, is instability."""
    def rec(step: int, reason: str, function: str = "resume_in_update at /x/td3.py:116") -> dict:
        return {"function": function, "file": "/x/td3.py", "line": 116, "reason": reason, "step": step}

    flag = "6/0: update_actor == True                                     # if update_actor:  # td3.py:121 in update"
    once = {"reached_device": True, "steps": 6, "recompiles": [rec(3, flag)]}
    assert [(f.severity, f.message.split(" (")[0]) for f in analyze.findings_of(once, "/x/td3.py")] == [
        ("info", "graph for the other value of update_actor")]
    twice = {"reached_device": True, "steps": 6, "recompiles": [rec(3, flag), rec(4, flag.replace("6/0", "6/1"))]}
    assert [f.severity for f in analyze.findings_of(twice, "/x/td3.py")] == ["info", "error"]
    # each region gets its own graph for the value
    two_regions = {"reached_device": True, "steps": 6, "recompiles": [rec(3, flag), rec(3, flag, "update at /x/td3.py:110")]}
    assert [f.severity for f in analyze.findings_of(two_regions, "/x/td3.py")] == ["info", "info"]
    for reason in ("6/0: L['n'] == 3", "6/0: update_actor == True; tensor 'x' size mismatch at index 0"):
        other = {"reached_device": True, "steps": 6, "recompiles": [rec(3, reason)]}
        assert [f.severity for f in analyze.findings_of(other, "/x/td3.py")] == ["error"], reason


def _recompile_at(step: int, function: str = "update at /x/train.py:9") -> dict:
    return {"function": function, "file": "/x/train.py", "line": 9, "reason": "0/0: L['self']._in_keys is None", "step": step}


def test_step_1_recompile_is_warmup_only_when_the_run_shows_it_stable() -> None:
    def kinds(recompiles: list[dict], steps: int) -> list[tuple[str, str]]:
        record = {"reached_device": True, "steps": steps, "recompiles": recompiles}
        return [(f.kind, f.severity) for f in analyze.findings_of(record, "/x/train.py")]

    assert kinds([_recompile_at(1)], 3) == [("warm-up-recompile", "warning")]
    # too few steps to see step 2: not known to be stable
    assert kinds([_recompile_at(1)], 2) == [("recompile", "error")]
    # more than the bound at step 1, for one region
    assert kinds([_recompile_at(1)] * (analyze.WARMUP_RECOMPILES + 1), 4) == [("recompile", "error")] * 3
    # two regions each within the bound; a recompile at step 2 of one makes only that one unstable
    other = "loss at /x/train.py:20"
    assert sorted(kinds([_recompile_at(1), _recompile_at(1, other), _recompile_at(2, other)], 4)) == [
        ("recompile", "error"), ("recompile", "error"), ("warm-up-recompile", "warning")]


def test_a_region_first_compiled_late_has_its_warmup_counted_from_its_first_compile() -> None:
    """torchrl's collector compiles its policy itself and first calls it once the random frames are in
    (dqn_cartpole: frame 9 first compiled at step 2, rebuilt at its second call on tensordict's key
    count). Its warm-up is its own first step and the next, not step 1 of the run."""
    policy = "wrapper at common.py:219"
    graphs = [{"compile_id": "0/0", "step": 0}, {"compile_id": "9/0", "step": 2}, {"compile_id": "9/1", "step": 2}]

    def kinds(steps: list[int], steps_run: int) -> list[tuple[str, str, str]]:
        recompiles = [{"function": policy, "file": "/x/train.py", "line": 9, "step": step,
                       "reason": f"9/{n}: len(args[1]._tensordict) == 8"} for n, step in enumerate(steps)]
        record = {"reached_device": True, "steps": steps_run, "recompiles": recompiles, "graphs": graphs}
        return [(f.kind, f.severity, f.message.split(" of ")[0]) for f in analyze.findings_of(record, "/x/train.py")]

    assert kinds([2], 5) == [("warm-up-recompile", "warning",
                              "recompiled 1 time(s) during warm-up (steps 2-3, from its first compile at step 2), "
                              "stable after (steps 4-4 compiled nothing new)")]
    assert kinds([2, 3], 6) == [("warm-up-recompile", "warning", kinds([2, 3], 6)[0][2])]
    # too few steps after it to see it stable; or compiled again after its warm-up
    assert [k[:2] for k in kinds([2], 3)] == [("recompile", "error")]
    assert "--steps 5 or more" in analyze.findings_of(
        {"reached_device": True, "steps": 3, "graphs": graphs, "recompiles": [
            {"function": policy, "file": "/x/train.py", "line": 9, "step": 2, "reason": "9/0: x"}]},
        "/x/train.py")[0].message
    assert [k[:2] for k in kinds([2, 4], 6)] == [("recompile", "error")] * 2
    # a frame compiled at step 0 keeps the step policy: a recompile at step 2 is after warm-up
    early = {"reached_device": True, "steps": 6, "graphs": graphs,
             "recompiles": [{"function": "update at /x/train.py:3", "file": "/x/train.py", "line": 3, "step": 2,
                             "reason": "0/0: L['x'] size mismatch"}]}
    assert [f.severity for f in analyze.findings_of(early, "/x/train.py")] == ["error"]


def _shared_at(step: int, caller: str | None, first: bool, function: str = "step at adam.py:214") -> dict:
    return {"function": function, "file": "/x/train.py", "line": 9, "reason": "4/0: grad is None", "step": step,
            "caller": caller, "first_call": caller if first else None}


def test_shared_frame_recompiles_are_warmup_within_the_bound_and_with_quiet_steps_after() -> None:
    def kinds(recompiles: list[dict], steps: int) -> list[tuple[str, str]]:
        record = {"reached_device": True, "steps": steps, "recompiles": recompiles}
        return [(f.kind, f.severity) for f in analyze.findings_of(record, "/x/train.py")]

    crossq = [_shared_at(2, "update_all", True), _shared_at(3, "update_qloss", False)]
    assert kinds(crossq, 6) == [("warm-up-recompile", "warning")]
    assert kinds(crossq, 5) == [("recompile", "error")] * 2  # only step 4 after step 3
    # a recompile with no compiled function running: not the callers' own compile
    assert kinds([*crossq, _shared_at(4, None, False)], 8) == [("recompile", "error")] * 3
    # more than SHARED_RECOMPILES for each of its two callers
    many = [*crossq, *(_shared_at(3, "update_qloss", False) for _ in range(2 * analyze.SHARED_RECOMPILES - 1))]
    assert kinds(many, 8) == [("recompile", "error")] * len(many)
    # a frame never recompiled in a first call keeps the step policy: step 3 is after warm-up
    assert kinds([_shared_at(3, "update_qloss", False)], 8) == [("recompile", "error")]


def test_thread_pool_tasks_draw_in_submit_order(tmp_path: Path) -> None:
    """harness/schedule.py: a task that draws after a pause, and the main thread drawing right after its
    submit, draw in submit order (the task first) once installed; a task submitted from its own pool's
    worker is not waited for (no deadlock on one worker)."""
    import subprocess
    import sys

    script = tmp_path / "pool.py"
    script.write_text(
        "import concurrent.futures, random, time\n"
        "from porter.check.harness import schedule\n"
        "schedule.install()\n"
        "order = []\n"
        "def task():\n"
        "    time.sleep(0.2); order.append('task')\n"
        "pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)\n"
        "pool.submit(task); order.append('main')\n"
        "def outer():\n"
        "    return pool.submit(lambda: 'inner')\n"
        "inner = pool.submit(outer).result().result(timeout=5)\n"
        "print(order, inner, schedule.waited())\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['task',", "'main']", "inner", "2"]


def test_the_scripts_frames_under_a_deep_library_stack_are_kept(tmp_path: Path) -> None:
    """A sync 20 library frames below the script's evaluation (torchrl's rollout): the innermost 8
    frames are the library's, and the script's own lines past them are kept, so its logging
    interval still excuses the sync."""
    import importlib.util

    from porter.check.harness import state

    library = tmp_path / "site-packages" / "deeplib.py"
    library.parent.mkdir()
    library.write_text("def down(n, at_bottom):\n    return at_bottom() if n == 0 else down(n - 1, at_bottom)\n")
    script = tmp_path / "project" / "train.py"
    script.parent.mkdir()
    script.write_text("def evaluate(lib, probe):\n    return lib.down(20, probe)\n")
    modules = []
    for name, path in (("deeplib", library), ("train_script", script)):
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    lib, train = modules
    stack = train.evaluate(lib, state.user_stack)
    assert [f for f, _ in stack[:8]] == [str(library)] * 8
    assert (str(script), 2) in stack
    assert len([f for f, _ in stack if f == str(library)]) == 8  # library frames past the first 8 are dropped


def _warmup_record(steps: int, compiles: list[int]) -> tuple[dict, dict]:
    """A sync at step 1 inside update() (lines 10-20 of train.py), update handed to torch.compile at
    each step of ``compiles``, one graph per compile."""
    sync = {"kind": "__bool__", "file": "/x/lib.py", "line": 5, "step": 1, "count": 1,
            "stack": [["/x/lib.py", 5], ["/x/train.py", 12]]}
    record = {"steps": steps, "syncs": [sync],
              "compile_calls": [{"step": at, "code": ["/x/train.py", 10, 20]} for at in compiles],
              "graphs": [{"step": at} for at in compiles]}
    return record, sync


def test_a_sync_before_the_scripts_compile_is_warm_up() -> None:
    record, sync = _warmup_record(steps=3, compiles=[2])
    why = analyze._excused(record, sync, [tuple(f) for f in sync["stack"]])
    assert why is not None and "eager warm-up" in why and "step 2" in why


def test_a_sync_after_an_earlier_compile_of_the_same_code_is_not_warm_up() -> None:
    # compiled at step 0 and again at step 2 (a compile in the loop, a recompile): step 1 ran compiled
    record, sync = _warmup_record(steps=3, compiles=[0, 2])
    assert analyze._excused(record, sync, [tuple(f) for f in sync["stack"]]) is None


def test_a_compile_at_the_last_step_proves_nothing() -> None:
    record, sync = _warmup_record(steps=2, compiles=[2])
    assert analyze._excused(record, sync, [tuple(f) for f in sync["stack"]]) is None
    record, sync = _warmup_record(steps=3, compiles=[2])
    record["graphs"] = []  # compiled, but no graph from then on: it may still run eagerly
    assert analyze._excused(record, sync, [tuple(f) for f in sync["stack"]]) is None


def test_the_compiled_code_span_is_the_decorated_function_s_own() -> None:
    import functools

    from porter.check.harness.patches import _code_span

    def timed(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return fn(*args)
        return wrapper

    @timed
    def update(x):
        y = x + 1
        return y

    @timed
    def evaluate(x):
        return x

    span, other = _code_span(update), _code_span(evaluate)
    assert span is not None and other is not None and span != other
    assert span[0] == __file__ and span[1] == update.__wrapped__.__code__.co_firstlineno


def _original_runs(written: list[float], semantic: list[float], **seen: bool) -> tuple:
    from porter.check.runner import RunResult

    def result(losses: list[float], extra: dict) -> RunResult:
        record = {"losses": [[i, x] for i, x in enumerate(losses)], **extra}
        return RunResult(record=record, returncode=0, timed_out=False, wall_s=1.0, stdout="", stderr="")

    return result(semantic, {}), result(written, dict(seen))


def _matched_parity() -> object:
    from porter.check.report import Parity, ParityPass

    matched = ParityPass("semantic (fp32, dropout off)", "SEMANTIC_RTOL_COMPILED", 5e-4, 1e-6, (1.0, 2.0), (1.0, 2.0), 0.0, "match")
    return Parity(original="orig.py", passes=(matched, dataclasses.replace(matched, name="precision (as written)")))


def test_an_original_that_differs_from_itself_gives_no_verdict() -> None:
    """No autocast, no dropout: its fp32 and as-written runs are one program; losses that differ
    there mean the script draws on timing (sac-async's collector process), so a match proves nothing."""
    from porter.check.orchestrate import _same_program

    semantic, written = _original_runs([1.0, 2.0], [1.0, 2.5])
    passes = _same_program(_matched_parity(), semantic, written).passes  # type: ignore[arg-type]
    assert [p.verdict for p in passes] == ["no-verdict", "no-verdict"]
    assert "nondeterminism" in passes[0].note and "0.2" in passes[0].note


def test_autocast_or_dropout_explains_two_different_original_runs() -> None:
    from porter.check.orchestrate import _same_program

    parity_in = _matched_parity()
    for seen in ({"autocast_seen": True}, {"dropout_seen": True}):
        semantic, written = _original_runs([1.0, 2.0], [1.0, 2.5], **seen)
        assert _same_program(parity_in, semantic, written) is parity_in  # type: ignore[arg-type]
    semantic, written = _original_runs([1.0, 2.0], [1.0, 2.0])
    assert _same_program(parity_in, semantic, written) is parity_in  # type: ignore[arg-type]
