"""Each collector against a crafted script: the right finding, at the right source line."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import SCRIPTS, check, findings, marked_line


def test_clean_port_compiles_and_passes() -> None:
    code, report = check("mlp_port.py", "--steps", "4")
    assert code == 0, report["findings"]
    assert report["target"] == "emulated"
    assert "upstream torch-mlir approximation of TorchNeuron's front end" in report["target_description"]
    stages = {s["name"]: s["ran"] for s in report["stages"]}
    assert stages["Dynamo"] and stages["AOTAutograd"] and stages["StableHLO lowering"]
    assert not stages["neuronx-cc / NEFF"] and not stages["Neuron runtime"]
    kinds = sorted(g["kind"] for g in report["graphs"])
    assert kinds == ["backward", "forward"]
    assert all(g["status"] == "lowered" for g in report["graphs"])
    assert report["steps_run"] == 4 and len(report["losses"]) == 4
    # the logging-interval .item() is not a per-step sync
    assert report["syncs_per_step"]["per step (findings)"] == 0
    assert report["syncs_per_step"]["per step (steps >= 1, all)"] > 0


def test_item_every_step_is_a_host_sync_at_its_line() -> None:
    code, report = check("item_in_loop.py", "--steps", "4")
    assert code == 1
    syncs = findings(report, "host-sync")
    assert [(f["line"], f["severity"]) for f in syncs] == [(marked_line("item_in_loop.py", "SYNC-LINE"), "error")]
    assert syncs[0]["file"] == "item_in_loop.py"
    assert "item" in syncs[0]["message"] and syncs[0]["count"] == 3  # steps 1, 2, 3
    assert syncs[0]["rule"] == "NRN606"
    _rules_are_real(report)


def test_shape_change_at_step_3_is_a_recompile_after_warmup() -> None:
    code, report = check("shape_change.py", "--steps", "5")
    assert code == 1
    recompiles = [f for f in findings(report, "recompile") if f["severity"] == "error"]
    assert len(recompiles) == 1
    assert recompiles[0]["line"] == marked_line("shape_change.py", "RECOMPILE-LINE")
    assert "step 3" in recompiles[0]["message"] and "size mismatch" in recompiles[0]["message"]
    assert recompiles[0]["rule"] == "NRN701"
    _rules_are_real(report)
    (region,) = report["shapes"]
    assert len(region["shapes"]) == 2  # batch 4 and batch 3: two compiles on Neuron


def test_warmup_only_recompile_at_step_1_is_a_warning_that_passes() -> None:
    """A guard on state the first call set (a lazily set `_in_keys`): one recompile at step 1, none
    in steps 2-3: one extra graph compile on Neuron, reported, not failed."""
    code, report = check("warmup_recompile.py", "--steps", "4")
    assert code == 0, report["findings"]
    assert findings(report, "recompile") == []
    (warm,) = findings(report, "warm-up-recompile")
    assert warm["severity"] == "warning" and warm["count"] == 1 and warm["file"] == "warmup_recompile.py"
    assert warm["message"].startswith("recompiled 1 time(s) during warm-up (step 1), stable after (steps 2-3")
    assert "_in_keys is None" in warm["message"]


def test_per_step_recompile_fails_from_step_1_on() -> None:
    code, report = check("warmup_recompile.py", "--steps", "4", "--", "--per-step")
    assert code == 1
    assert findings(report, "warm-up-recompile") == []
    errors = findings(report, "recompile")
    assert sorted(int(f["message"].split("(step ")[1][0]) for f in errors) == [1, 2, 3]
    assert all(f["severity"] == "error" and "scale ==" in f["message"] for f in errors)
    assert any("recompiled again at step >= 2: not stable" in f["message"] for f in errors)


def test_fused_adamw_state_made_while_dynamo_traces_is_on_the_device() -> None:
    code, report = check("fused_adamw_compiled.py", "--steps", "3")
    assert findings(report, "device-mixing") == [], findings(report, "device-mixing")
    assert code == 0, [f for f in report["findings"] if f["severity"] == "error"]
    assert report["steps_run"] == 3


def test_model_built_under_a_device_context_is_on_the_device() -> None:
    code, report = check("device_context_model.py", "--steps", "3")
    assert findings(report, "device-mixing") == [], findings(report, "device-mixing")
    assert code == 0, [f for f in report["findings"] if f["severity"] == "error"]


def test_data_dependent_branch_is_a_graph_break_under_fullgraph() -> None:
    code, report = check("graph_break.py", "--steps", "3")
    assert code == 2  # fullgraph=True is honoured: Dynamo raises at the break, as on the device
    breaks = findings(report, "graph-break")
    line = marked_line("graph_break.py", "BREAK-LINE")
    assert [(f["file"], f["line"]) for f in breaks] == [("graph_break.py", line)]
    assert breaks[0]["severity"] == "error" and "fullgraph=True" in breaks[0]["message"]
    assert "Data-dependent" in breaks[0]["message"]
    assert "Explanation:" in breaks[0]["message"] and "Hint:" in breaks[0]["message"]  # the whole reason
    assert report["crash"]["line"] == line


def test_host_compile_and_a_break_outside_fullgraph_are_warnings() -> None:
    code, report = check("host_policy_compile.py", "--steps", "3")
    assert report["crash"] is None, report["crash"]
    assert findings(report, "compile-backend") == []  # a CPU module's compile runs on the host
    (host,) = findings(report, "compile-backend-host")
    assert host["line"] == marked_line("host_policy_compile.py", "HOST-COMPILE") and host["severity"] == "warning"
    breaks = findings(report, "graph-break")
    assert [f["line"] for f in breaks] == [marked_line("host_policy_compile.py", "BREAK-LINE")]
    assert breaks[0]["severity"] == "warning" and "fullgraph" not in breaks[0]["message"]


DUMP_DIR = Path(tempfile.gettempdir()) / "porter-check-tests" / "dump-lowering-fail"


def test_op_that_does_not_lower_is_named_with_its_line() -> None:
    shutil.rmtree(DUMP_DIR, ignore_errors=True)
    code, report = check("lowering_fail.py", "--steps", "2", "--bisect", "--dump", str(DUMP_DIR), "--", "--fallback")
    assert code == 1 and report["crash"] is None  # fallback enabled: the graph ran eagerly
    (failure,) = findings(report, "lowering")
    assert "aten._fft_r2c" in failure["message"]
    assert failure["line"] == marked_line("lowering_fail.py", "FFT-LINE")
    failed = [g for g in report["graphs"] if g["status"] == "failed"]
    assert failed and "aten._fft_r2c" in failed[0]["failed_ops"]
    assert "aten._fft_r2c in <root>" in failed[0]["bisect"]  # --bisect: the submodule (the root) and line
    # --dump: the trace directory holds Dynamo FX, AOT FX, and StableHLO or the lowering error
    names = sorted(p.name for p in DUMP_DIR.iterdir())
    assert any(n.endswith("_dynamo.fx.txt") for n in names)
    assert any(n.endswith("_forward.aot.fx.txt") for n in names) and any(n.endswith("_backward.aot.fx.txt") for n in names)
    assert any(n.endswith("_forward.lowering-error.txt") for n in names)
    assert any(n.endswith("_backward.stablehlo.mlir") for n in names)
    hlo = next(p for p in DUMP_DIR.iterdir() if p.name.endswith(".stablehlo.mlir")).read_text()
    assert "stablehlo." in hlo


def test_graph_that_does_not_lower_is_a_hard_error_without_fallback() -> None:
    code, report = check("lowering_fail.py", "--steps", "2")
    assert code == 2, report["findings"]  # TorchNeuron's default: a failing graph raises
    assert "aten._fft_r2c" in report["crash"]["message"] and "fallback" in report["crash"]["message"]
    (failure,) = findings(report, "lowering")
    assert failure["line"] == marked_line("lowering_fail.py", "FFT-LINE")


def test_fallback_switches() -> None:
    from porter.check.harness.patches import fallback_enabled

    assert not fallback_enabled(None) and fallback_enabled({"fallback_execution": True})
    assert not fallback_enabled({"fallback_execution": False})


def test_float64_on_device_is_reported_at_its_line() -> None:
    code, report = check("float64.py", "--steps", "2", "--allow-eager")
    lines = {f["line"] for f in findings(report, "float64")}
    assert marked_line("float64.py", "F64-LINE") in lines
    assert code == 0  # a warning: fails only under --strict (see test_units for --strict)
    assert {f["severity"] for f in findings(report, "float64")} == {"warning"}


def test_unported_cuda_script_fails_at_the_lines_rules_change() -> None:
    code, report = check("cuda_unported.py", "--steps", "2")
    assert code == 1
    assert findings(report, "no-device"), "a port that never reached the neuron device must fail"
    lines = {(f["line"], f["rule"]) for f in findings(report, "cuda")}
    expect = {
        (marked_line("cuda_unported.py", "CUDA-AVAILABLE"), "NRN103"),
        (marked_line("cuda_unported.py", "CUDA-METHOD"), "NRN102"),
        (marked_line("cuda_unported.py", "CUDA-STRING"), "NRN102"),
        (marked_line("cuda_unported.py", "AUTOCAST"), "NRN201"),
        (marked_line("cuda_unported.py", "SYNCHRONIZE"), "NRN103"),
        (marked_line("cuda_unported.py", "SCALER"), "NRN204"),
    }
    assert expect <= lines, lines
    _rules_are_real(report)


def _rules_are_real(report: dict) -> None:
    """Every finding names a rule code ``porter explain`` knows (or none)."""
    from porter.engine.registry import all_rules

    codes = {code for rule in all_rules() for code in rule.all_codes()}
    assert {f["rule"] for f in report["findings"] if f["rule"]} <= codes


def test_crash_exits_2_with_the_line() -> None:
    code, report = check("crashes.py", "--steps", "2")
    assert code == 2
    crash = report["crash"]
    assert crash["kind"] == "exception" and "RuntimeError" in crash["message"]
    assert crash["file"].endswith("crashes.py") and crash["line"] == marked_line("crashes.py", "CRASH-LINE")
    assert "Traceback" in crash["traceback"]


def test_timeout_exits_2() -> None:
    code, report = check("hangs.py", "--timeout", "6")
    assert code == 2 and report["crash"]["kind"] == "timeout"


def test_cpu_tensor_into_neuron_model_is_device_mixing() -> None:
    code, report = check("mixing.py", "--steps", "2")
    assert code == 1
    mixes = findings(report, "device-mixing")
    assert mixes and {f["line"] for f in mixes} == {marked_line("mixing.py", "MIX-LINE")}


def test_dynamic_compile_has_symbolic_sizes() -> None:
    code, report = check("dynamic.py", "--steps", "2")
    assert code == 1
    symbolic = findings(report, "symbolic-shape")
    assert symbolic, report["findings"]
    # named at the line that called the compiled code with the changing size
    assert {(f["file"], f["line"]) for f in symbolic} == {("dynamic.py", marked_line("dynamic.py", "CALL-LINE"))}
    assert any(g["symbolic"] for g in report["graphs"])
    (dyn,) = findings(report, "compile-dynamic")
    assert dyn["line"] == marked_line("dynamic.py", "DYNAMIC-LINE")


def test_padding_from_input_ids_uses_the_pad_id_the_graph_compares_with() -> None:
    code, report = check("pad_id_tokens.py", "--steps", "3")
    assert code == 0, report["findings"]
    padding = report["padding"]
    assert padding["sources"] == ["input_ids == 3"]
    assert (padding["padded"], padding["tokens"]) == (3 * 12, 3 * 32)  # 3 steps, 12 of 32 padded each


def test_cpu_copy_of_a_device_model_stays_on_the_cpu() -> None:
    """copy_ / _foreach_copy_ into CPU tensors keep them CPU tensors (torchrl's collector acts with a
    CPU copy of the policy): acting with the copy on CPU data is no mixing. Before, the copy's
    weights took the source's device tag and every CPU forward was reported as mixing."""
    code, report = check("cpu_copy_policy.py", "--steps", "4", "--allow-eager")
    assert not findings(report, "device-mixing"), report["findings"]
    assert report["steps_run"] == 4 and code == 0, report["findings"]


def test_to_device_inside_a_compiled_function_traces() -> None:
    """x.to(device) traced by Dynamo goes to the emulated device (the CPU), not to a PrivateUse1
    fake tensor that meets the CPU ones (torchrl's gamma.to(self._device): Tensor device mismatch)."""
    code, report = check("compiled_to_device.py", "--steps", "3")
    assert report["crash"] is None, report["crash"]
    assert report["steps_run"] == 3 and report["graphs"], report["findings"]
    assert code == 0, report["findings"]


def test_vmap_outputs_are_on_the_device() -> None:
    """torch.vmap's outputs are where its inputs are: before, they came back untagged and their
    first use with a device tensor was reported as mixing (torchrl's MultiAgentMLP, mappo_ippo)."""
    code, report = check("vmap_outputs.py", "--steps", "2", "--allow-eager")
    assert not findings(report, "device-mixing"), report["findings"]
    assert report["steps_run"] == 2 and code == 0, report["findings"]


def test_inside_vmap_a_wrapped_tensor_is_on_its_tensors_device() -> None:
    """Inside torch.vmap the function sees functorch wrappers (made in C++, untagged): before, each
    use with a device tensor from the closure read as CPU/device mixing, and xi.device as the CPU."""
    code, report = check("vmap_closure.py", "--steps", "2", "--allow-eager")
    assert not findings(report, "device-mixing"), report["findings"]
    assert report["steps_run"] == 2 and code == 0, report["findings"]


def test_is_cpu_is_false_on_the_device() -> None:
    """Tensor.is_cpu is False for a device tensor, as .device says (tensordict's to("cpu") skips a
    leaf whose is_cpu is True). Before, an emulated device tensor answered True, the host copy was
    skipped, and torchrl's rollout (auto_cast_to_device=True) mixed its policy's action with the
    env's CPU rewards in RewardSum (iql_offline's evaluation, a false device-mixing error)."""
    code, report = check("is_cpu_copy.py", "--steps", "2", "--allow-eager")
    assert not findings(report, "device-mixing"), report["findings"]
    assert report["crash"] is None, report["crash"]
    assert report["steps_run"] == 2 and code == 0, report["findings"]


def test_data_rebinding_moves_the_tensor() -> None:
    """t.data = other puts t on other's device (tensordict rebinds buffers so); is_set_to computes
    nothing. Before, the rebound buffer stayed a CPU tensor and mixed in every use."""
    code, report = check("data_rebind.py", "--steps", "2", "--allow-eager")
    assert not findings(report, "device-mixing"), report["findings"]
    assert report["steps_run"] == 2 and code == 0, report["findings"]


def test_python_override_inside_a_compiled_region_runs_on_the_emulated_device() -> None:
    """A __torch_function__ override called in a compiled region (a TensorDict's torch.cat in
    torchrl's CQL loss) runs its own torch calls under the mode too: before, its device="neuron"
    factory made a PrivateUse1 fake tensor and Dynamo failed with "Tensor device mismatch"."""
    code, report = check("compiled_override.py", "--steps", "3")
    assert report["crash"] is None, report["crash"]
    assert report["steps_run"] == 3 and report["graphs"], report["findings"]
    assert all(g["status"] == "lowered" for g in report["graphs"]), report["graphs"]
    assert code == 0, report["findings"]


def test_a_thread_the_script_starts_runs_on_the_emulated_device() -> None:
    """The device mode is per thread: before, a thread's device="neuron" reached the real, kernel-
    less PrivateUse1 backend (torchrl's async collectors). Its steps now count and compile."""
    code, report = check("thread_steps.py", "--steps", "3")
    assert report["crash"] is None, report["crash"]
    assert report["steps_run"] == 3 and report["graphs"], report["findings"]
    assert code == 0, report["findings"]


def test_frame_shared_by_two_compiled_functions_is_compiled_once_for_each() -> None:
    """torchrl's crossq shape: update_critic and update_both step one optimizer; update_both first runs
    at step 2. Its first call compiles the optimizer's frames again (another backend object, other
    grads None), and the actor state it makes compiles update_critic's once more at step 3: warm-up,
    stable in steps 4-7, and the check passes."""
    code, report = check("shared_optimizer_step.py", "--steps", "8")
    assert code == 0, [f for f in report["findings"] if f["severity"] == "error"]
    assert findings(report, "recompile") == []
    warm = findings(report, "warm-up-recompile")
    assert [(w["severity"], w["line"]) for w in warm] == [("warning", marked_line("shared_optimizer_step.py", "SHARED-LINE"))] * 2
    assert all("compiled again for the first call of update_both" in w["message"] for w in warm)
    assert "BACKEND_MATCH" in warm[0]["message"] and "stable after (steps 3-7" in warm[0]["message"]
    assert sum(w["count"] for w in warm) == 3


@pytest.mark.slow  # three 8-step checks (69 s in CI); the policy's bounds are unit-tested in test_units.py
def test_shared_frame_needs_quiet_steps_after_it_and_per_step_guards_still_fail() -> None:
    code, report = check("shared_optimizer_step.py", "--steps", "4")
    assert code == 1
    errors = findings(report, "recompile")
    assert errors and all("2 steps after step" in f["message"] for f in errors)
    code, report = check("shared_optimizer_step.py", "--steps", "8", "--", "--per-step")
    assert code == 1
    unstable = [f for f in findings(report, "recompile") if "scale ==" in f["message"]]
    assert len(unstable) >= 5 and all(f["severity"] == "error" for f in unstable)


def test_the_harness_step_counter_adds_no_graph_break_to_a_compiled_update() -> None:
    """The optimizer-step hook that counts steps runs inside a compiled update; Dynamo logs a break
    for its file write. A device run has no such hook: that break is not the script's."""
    code, report = check("compiled_update_step.py", "--steps", "3")
    assert code == 0, report["findings"]
    assert report["steps_run"] == 3
    breaks = findings(report, "graph-break")
    assert breaks and not any("open" in f["message"] for f in breaks), breaks


def test_a_library_sync_is_named_at_the_scripts_own_line() -> None:
    """The sync and the graph break happen in a library (a file under site-packages); each finding
    is at the script's line that calls into it, with the library's file, line and text in the
    message: the line the script's author can change or mark."""
    code, report = check("library_sync.py", "--steps", "4")
    assert code == 1
    own = marked_line("library_sync.py", "CALLS-LIB")
    (sync,) = findings(report, "host-sync")
    assert (sync["file"], sync["line"]) == ("library_sync.py", own)
    lib_line = next(n for n, text in enumerate(
        (SCRIPTS / "libsite" / "site-packages" / "steplib.py").read_text().splitlines(), 1) if "# LIB-SYNC" in text)
    assert f"inside a library this line calls: steplib.py:{lib_line} `if not torch.isfinite(loss):" in sync["message"]
    assert sync["detail"].startswith("loss = steplib.checked(")
    breaks = findings(report, "graph-break")
    # Dynamo meets the break twice: compiling `forward` (called at CALLS-LIB), then compiling the library
    # function's own frame (called at CALLS-NOISY, as `forward` runs on after the break)
    calls = {own, marked_line("library_sync.py", "CALLS-NOISY")}
    assert {(b["file"], b["line"]) for b in breaks} == {("library_sync.py", n) for n in calls}, breaks
    assert all("inside a library this line calls: steplib.py:" in b["message"] for b in breaks)
    (mix,) = findings(report, "device-mixing")
    assert (mix["file"], mix["line"]) == ("library_sync.py", marked_line("library_sync.py", "CALLS-MIX"))
    assert "inside a library this line calls: steplib.py:" in mix["message"] and "LIB-MIX" in mix["message"]


def test_a_sync_once_per_outer_loop_is_named_with_its_steps() -> None:
    """Still a failing finding (porter does not read an epoch loop as a logging interval), but the
    message says the steps it ran at, not "every step"."""
    code, report = check("outer_loop_sync.py", "--steps", "5")
    assert code == 1
    (sync,) = findings(report, "host-sync")
    assert sync["line"] == marked_line("outer_loop_sync.py", "EPOCH-SYNC")
    assert sync["message"].startswith("host sync `item` at steps 2, 4 of steps 1-4, outside a logging interval (not every"), sync["message"]


def test_vmap_over_a_tensor_collection_leaf_is_on_its_device() -> None:
    """A tensor collection excluded from pytree (torchrl's sac scripts) is one leaf to torch.vmap: its
    tensors decide the outputs' device. Before, the vmapped Q-values came back untagged and every use
    with a device tensor read as mixing (sac-async's loss, torchrl/objectives/sac.py:895)."""
    code, report = check("vmap_tensordict.py", "--steps", "2", "--allow-eager")
    assert not findings(report, "device-mixing"), report["findings"]
    assert report["steps_run"] == 2 and code == 0, report["findings"]


def test_a_sync_in_the_scripts_eager_warm_up_is_excused() -> None:
    """A function run eagerly for its first calls and compiled after (torchrl's compile_with_warmup):
    its host sync at step 1 is the warm-up's, listed as excused, not a per-step sync."""
    code, report = check("warmup_eager_sync.py", "--steps", "4")
    assert report["steps_run"] == 4 and not findings(report, "host-sync"), report["findings"]
    excused = [e for e in report["excused_syncs"] if e["line"] == marked_line("warmup_eager_sync.py", "BOUND-CHECK")]
    assert excused and "eager warm-up" in excused[0]["reason"] and "compiles it at step 2" in excused[0]["reason"]
    assert report["syncs_per_step"]["per step (findings)"] == 0
    assert report["syncs_per_step"]["per step (steps >= 1, all)"] > 0


def test_a_sync_before_a_compile_the_run_never_reached_is_a_finding() -> None:
    """Stopped after 2 steps, the run never saw the update compiled: nothing shows the sync gone, so
    it stays a per-step sync at its line."""
    code, report = check("warmup_eager_sync.py", "--steps", "2")
    syncs = findings(report, "host-sync")
    assert code == 1 and [f["line"] for f in syncs] == [marked_line("warmup_eager_sync.py", "BOUND-CHECK")], report["findings"]
    assert not report["excused_syncs"]


def test_a_spawned_helper_does_not_replace_the_launchers_record() -> None:
    """A process the script spawns that trains nothing (a collector's worker compiling its host policy)
    is a helper: the launcher's steps and losses stay the run's. Before, its record was adopted as
    rank 0's and the check saw 0 steps and no device (sac-async)."""
    code, report = check("spawn_helper.py", "--steps", "3")
    assert report["steps_run"] == 3 and len(report["losses"]) == 3, report["findings"]
    assert any("1 process(es) spawned by the script ran no training step" in n for n in report["notes"])
    assert not findings(report, "no-device") and code == 0, report["findings"]
