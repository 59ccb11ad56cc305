"""Honest reporting: what --steps counted, nothing compiled, sys.exit, the script's own import
path, GradScaler with a fused optimizer, the original's CUDA emulation."""

from __future__ import annotations

from conftest import SCRIPTS, check, findings, marked_line

from porter.check.runner import RunSpec, run


def test_manual_sgd_loop_is_counted_by_backward() -> None:
    code, report = check("manual_sgd.py", "--steps", "3")
    assert report["crash"] is None, report["crash"]
    assert report["step_counter"] == "backward()" and report["steps_run"] == 3
    assert len(report["losses"]) == 3  # --steps enforced: the loop would run 10
    assert any("counted by backward()" in n for n in report["notes"])
    (sync,) = findings(report, "host-sync")  # per-step syncs are attributed to steps now
    assert sync["line"] == marked_line("manual_sgd.py", "SYNC-LINE") and code == 1


def test_optimizer_scripts_are_counted_by_optimizer_step() -> None:
    code, report = check("mlp_port.py", "--steps", "4")
    assert report["step_counter"] == "optimizer.step()"


def test_nothing_compiled_fails_unless_allowed() -> None:
    code, report = check("float64.py", "--steps", "2")
    assert code == 1
    (finding,) = findings(report, "nothing-compiled")
    assert finding["severity"] == "error" and "--allow-eager" in finding["message"]
    allowed_code, allowed = check("float64.py", "--steps", "2", "--allow-eager")
    assert allowed_code == 0 and findings(allowed, "nothing-compiled")[0]["severity"] == "info"
    assert "nothing compiled" in allowed["verdict"]


def test_nothing_compiled_names_the_marker_where_porter_declined() -> None:
    code, report = check("declined_compile.py", "--steps", "2")
    (finding,) = findings(report, "nothing-compiled")
    assert code == 1 and finding["file"] == "declined_compile.py"
    assert finding["line"] == marked_line("declined_compile.py", "porter: NRN413")
    assert "porter left it uncompiled: NRN413 not compiled: model is a library module" in finding["message"]


def test_sys_exit_shows_the_scripts_stderr() -> None:
    code, report = check("sys_exit.py", "--steps", "1")
    assert code == 2 and report["crash"]["message"] == "SystemExit: exit status 3"
    assert "data file tiny.bin not found" in report["crash"]["traceback"]


def test_emulated_target_says_fallback_ops_are_unknown() -> None:
    code, report = check("mlp_port.py", "--steps", "4")
    assert report["fallback_ops"] is None
    assert any(n.startswith("CPU fallback ops: unknown here") for n in report["notes"])


def test_grad_scaler_with_fused_adamw_is_flagged() -> None:
    code, report = check("fused_scaler.py", "--steps", "3")
    assert report["crash"] is None, report["crash"]
    (finding,) = findings(report, "grad-scaler-fused")
    assert finding["line"] == marked_line("fused_scaler.py", "SCALER-STEP") and finding["severity"] == "error"
    assert "grad_scale" in finding["message"] and code == 1


def test_port_and_original_each_import_their_own_helpers() -> None:
    for role, folder in (("port", "port"), ("original", "orig")):
        result = run(RunSpec(script=str(SCRIPTS / "pathpair" / folder / "train.py"), role=role, steps=1, timeout=120))
        assert result.record is not None and result.record["status"] != "crashed", (result.record or {}).get("error")


def test_original_runs_with_integer_devices_and_torch_accelerator() -> None:
    result = run(RunSpec(script=str(SCRIPTS / "accelerator_cuda.py"), role="original", steps=3, nproc=1, timeout=120,
                         extra_env=(("LOCAL_WORLD_SIZE", "2"),)))
    record = result.record or {}
    assert record.get("status") == "stopped", record.get("error")
    assert record["steps"] == 3 and len(record["losses"]) == 3


def test_suffix_slice_backward_lowers_end_to_end() -> None:
    code, report = check("suffix_slice.py", "--steps", "3")
    assert code == 0, report["findings"]
    assert [g["kind"] for g in report["graphs"]] == ["forward", "backward"]
    assert all(g["status"] == "lowered" for g in report["graphs"])


def test_a_pass_without_a_verdict_says_why() -> None:
    from porter.check.orchestrate import _no_loss_reason
    from porter.check.runner import RunResult

    def result(record: dict | None, timed_out: bool = False) -> RunResult:
        return RunResult(record=record, returncode=0, timed_out=timed_out, wall_s=1.0, stdout="", stderr="")

    stopped = {"status": "completed", "steps": 0, "losses": [], "backward_calls": 0}
    assert _no_loss_reason(result(stopped), "original") == "the original stopped after 0 step(s) (completed): no backward() ran"
    vector = {"status": "stopped", "steps": 3, "losses": [], "backward_calls": 3}
    assert "never on a one-element tensor" in _no_loss_reason(result(vector), "port")
    assert _no_loss_reason(result(None, timed_out=True), "original") == "the original timed out"
    assert _no_loss_reason(result({"losses": [[0, 1.0]]}), "port") == ""


def test_lazy_modules_run_under_the_emulation() -> None:
    # before: the device mode read .dim() of LazyLinear's UninitializedParameter in its __init__
    # (ValueError: Attempted to use an uninitialized parameter), so no torchrl MLP script ran
    code, report = check("lazy_module.py", "--steps", "2")
    assert report["crash"] is None, report["crash"]
    assert code == 0 and report["steps_run"] == 2 and report["graphs"]


def test_lazy_parameters_materialize_on_the_device_they_were_made_on() -> None:
    """LazyLinear(..., device="neuron"): Tensor._make_subclass dropped the device's tag and
    materialize() read the host from .data, so the weights were host tensors and the first forward
    mixed CPU and neuron tensors. Their gradients are on the device too (no mixing in the step)."""
    code, report = check("lazy_on_device.py", "--steps", "3")
    assert report["crash"] is None, report["crash"]
    assert not findings(report, "device-mixing"), report["findings"]
    assert code == 0 and report["steps_run"] == 3 and report["graphs"], report["findings"]


def test_a_lazy_buffer_moves_to_the_device_before_it_has_a_shape() -> None:
    """Module.to(device) with an UninitializedBuffer in it (torchrl's CatFrames, decision_transformer's
    test env on the model's device): before, the emulated move cloned the buffer and raised
    "Attempted to use an uninitialized parameter", in the port and in the original alike."""
    code, report = check("lazy_buffer_moved.py", "--steps", "2", "--allow-eager")
    assert report["crash"] is None, report["crash"]
    assert not findings(report, "device-mixing"), report["findings"]
    assert code == 0 and report["steps_run"] == 2, report["findings"]


def test_a_traceback_printed_before_sys_exit_is_the_cause() -> None:
    code, report = check("printed_traceback.py", "--steps", "1")
    assert code == 2
    crash = report["crash"]
    assert crash["message"].startswith("SystemExit: exit status 1, after printing NotImplementedError: Could not run 'aten::empty'")
    assert crash["file"].endswith("printed_traceback.py") and crash["line"] == marked_line("printed_traceback.py", "RAISE-LINE")
    assert "Traceback (most recent call last):" in crash["traceback"]  # its head survives the long message


def test_a_python_torch_function_override_sees_the_emulated_device() -> None:
    # torchrl's specs: the override's own .to(device) ran with the emulation off and reached the
    # kernel-less PrivateUse1 backend ("Could not run 'aten::empty_strided' ... 'neuron' backend")
    code, report = check("spec_override.py", "--steps", "2")
    assert report["crash"] is None, report["crash"]
    assert code == 0, report["findings"]


def test_the_report_carries_the_originals_own_crash() -> None:
    """With --against, the report names the original's crash at its line (original_crash), so a
    reader (bench/check_corpus.py) can tell a crash the original shares from one only the port has."""
    code, report = check("crashes.py", "--steps", "2", "--against", str(SCRIPTS / "crashes_cuda.py"))
    assert code == 2
    original = report["original_crash"]
    assert original is not None and original["kind"] == "exception" and "RuntimeError" in original["message"]
    assert original["file"].endswith("crashes_cuda.py")
    assert original["line"] == marked_line("crashes_cuda.py", "CRASH-LINE")
    assert report["crash"]["line"] == marked_line("crashes.py", "CRASH-LINE")
    _, clean = check("mlp_port.py", "--steps", "2", "--against", str(SCRIPTS / "mlp_cuda.py"))
    assert clean["original_crash"] is None


def test_a_generator_on_the_training_device_runs_in_both_emulations() -> None:
    """``torch.Generator(device)`` (torchtune's PPO recipe) on CUDA in the original and on neuron in
    the port: a CPU-only torch has no CUDA generator and the emulated device registered none; both
    now draw from a CPU generator, the same numbers under the same seed."""
    code, report = check("generator_port.py", "--steps", "3", "--against", str(SCRIPTS / "generator_cuda.py"))
    assert code == 0, report["findings"]
    assert [p["verdict"] for p in report["parity"]["passes"]] == ["match", "match"]


def test_a_cuda_generator_left_in_a_port_is_a_finding_at_its_line() -> None:
    code, report = check("generator_kept_cuda.py", "--steps", "3")
    assert code == 1
    cuda = [f for f in report["findings"] if f["kind"] == "cuda"]
    assert [(f["line"], "torch.Generator on 'cuda'" in f["message"]) for f in cuda] == [
        (marked_line("generator_kept_cuda.py", "CUDA-GENERATOR"), True)]
