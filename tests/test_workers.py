"""Bounded time per file, and pool workers that run this process's porter or stop the run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.results import Failure, Success
from porter.run.batch import SMALL_BATCH, Task, port_target

LINES = b"import torch\nx = torch.zeros(2)\n" + b"".join(b"y%d = x.cuda()\n" % i for i in range(400))


def _chain(calls: int) -> bytes:
    return b"import torch\nx = torch.zeros(2)\ny = x" + b".cuda()" * calls + b"\n"


def test_a_file_over_the_time_limit_is_a_failure_left_as_it_was(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "big.py")
    with open(path, "wb") as handle:
        handle.write(LINES)
    started = time.perf_counter()
    index, result, key = port_target(Task(3, path, "py", True, Options(time_limit=0.05), True))
    assert time.perf_counter() - started < 30
    assert index == 3 and key is None  # a time-out is never cached
    assert isinstance(result, Failure) and result.kind == "timeout"
    assert "took longer than 0.05 s" in result.reason and "left as it was" in result.reason
    with open(path, "rb") as handle:
        assert handle.read() == LINES


def test_the_time_limit_does_not_change_the_cache_key() -> None:
    assert Options(time_limit=5).cache_key() == Options().cache_key()


def test_a_deep_chain_is_refused_before_libcst_parses_it() -> None:
    # 1,000 chained calls took 10 s in libcst's parser alone, 3,000 took minutes, and then failed.
    started = time.perf_counter()
    result = port_source(_chain(3000), "chain.py")
    assert isinstance(result, Failure) and "nested too deeply" in result.reason
    result = port_source(_chain(1000), "chain.py")
    assert isinstance(result, Failure) and "line 3" in result.reason
    assert time.perf_counter() - started < 20


def test_a_chain_porter_can_handle_still_ports() -> None:
    result = port_source(_chain(40), "chain.py")
    assert isinstance(result, Success)
    assert b".cuda()" not in result.new


@pytest.mark.slow
def test_chained_cuda_calls_port_in_linear_time() -> None:
    # 150 chained calls: 11 s before (every edit recounted the calls of its whole chain), ~1 s now.
    started = time.perf_counter()
    result = port_source(_chain(150), "chain.py")
    assert isinstance(result, Success)
    assert time.perf_counter() - started < 8


def _project(folder: str, count: int) -> None:
    os.makedirs(folder)
    for number in range(count):
        with open(os.path.join(folder, f"f{number}.py"), "w") as handle:
            handle.write("import torch\nx = torch.zeros(2).cuda()\n")


def _porter(*args: str, cwd: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # The console script, as a user runs it (its sys.path does not start with the current folder).
    script = os.path.join(os.path.dirname(sys.executable), "porter")
    if not os.path.exists(script):
        pytest.skip("no porter console script beside this interpreter")
    command = [script, *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.processes
def test_a_batch_from_a_folder_holding_a_porter_folder_uses_this_porter(tmp_path: object) -> None:
    home = str(tmp_path)
    os.makedirs(os.path.join(home, "porter"))  # a clone of porter beside the project
    _project(os.path.join(home, "proj"), SMALL_BATCH + 4)
    done = _porter("migrate", "proj", "-j2", "--no-cache", "--no-progress", "-q", cwd=home)
    assert done.returncode == 0, done.stderr
    assert f"{SMALL_BATCH + 4} files would change" in done.stdout + done.stderr
    assert "ImportError" not in done.stderr


@pytest.mark.processes
def test_workers_that_cannot_import_porter_stop_the_run_with_one_error(tmp_path: object) -> None:
    broken = os.path.join(str(tmp_path), "broken", "porter")
    os.makedirs(broken)
    with open(os.path.join(broken, "__init__.py"), "w") as handle:
        handle.write("raise ImportError('not the porter you are looking for')\n")
    project = os.path.join(str(tmp_path), "proj")
    _project(project, SMALL_BATCH + 4)
    # The parent drops the broken folder from its own path; the workers inherit PYTHONPATH.
    code = textwrap.dedent(f"""
        import sys
        sys.path = [entry for entry in sys.path if entry != {os.path.dirname(broken)!r}]
        from porter.cli import main
        sys.exit(main())
    """)
    script = os.path.join(str(tmp_path), "run_porter.py")
    with open(script, "w") as handle:
        handle.write(code)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(broken))
    command = [sys.executable, script, "migrate", project, "-j2", "--no-cache", "--no-progress", "-q"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("porter: error: the worker processes cannot start") == 1


def test_the_cli_time_limit_fails_one_file_and_the_batch_goes_on(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    from porter.cli import main

    folder = str(tmp_path)
    with open(os.path.join(folder, "big.py"), "wb") as handle:
        handle.write(LINES * 64)  # far more than a second of work on any machine: over the limit
    with open(os.path.join(folder, "small.py"), "w") as handle:
        handle.write("import torch\nx = torch.zeros(2).cuda()\n")
    assert main(["migrate", folder, "--time-limit", "1", "-j1", "--no-cache", "-q", "--no-progress"]) == 2
    output = capsys.readouterr()
    text = output.out + output.err
    assert "big.py: error: took longer than 1 s to port" in text
    assert "1 file would change" in text


def test_a_time_limit_swallowed_or_turned_into_another_error_is_still_a_time_limit() -> None:
    # Seen in CI: the interrupt landed inside ast.parse (SystemError: AST constructor recursion
    # depth mismatch) and once inside a gc callback, which ignores exceptions.
    from porter.run.batch import TimeLimit, _time_limit

    # The interrupt is raised only in porter's (and libcst's) own frames: run the busy loop as
    # code of a porter module; a loop in foreign code (this test module) waits it out.
    namespace: dict[str, object] = {"__name__": "porter._busy_for_test", "time": time}
    exec("def busy(seconds):\n    end = time.perf_counter() + seconds\n    while time.perf_counter() < end:\n        pass\n", namespace)
    busy = namespace["busy"]
    assert callable(busy)

    with pytest.raises(TimeLimit):
        with _time_limit(0.05):
            try:
                busy(0.5)
            except TimeLimit:
                pass  # swallowed, as a gc callback does: the body finishes, over the limit
    with pytest.raises(TimeLimit):
        with _time_limit(0.05):
            try:
                busy(0.5)
            except TimeLimit:
                raise SystemError("AST constructor recursion depth mismatch") from None
    with _time_limit(5):
        busy(0.01)  # under the limit: nothing raised, and the timer is off afterwards
    busy(0.2)
    reached = False
    with pytest.raises(TimeLimit):
        with _time_limit(0.05):
            end = time.perf_counter() + 0.5
            while time.perf_counter() < end:  # foreign code (a gc callback's place): not raised here
                pass
            reached = True
            busy(0.5)  # but in porter's code, on a later tick
    assert reached
