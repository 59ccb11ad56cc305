"""check_corpus calls a crash "the script's own" only when the original crashed the same way: the
same exception type at the same place (the port's line numbers move where porter inserted lines,
so the place is the file and the source text there). Before, any crash of the original did."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import check_corpus  # noqa: E402


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    orig, port = tmp_path / "orig", tmp_path / "port"
    orig.mkdir()
    port.mkdir()
    (orig / "train.py").write_text("import torch\nx = torch.zeros(2)\ny = cfg['missing']\n")
    # the port: a line inserted above (an import), the failing line one further down
    (port / "train.py").write_text("import torch\nimport torch_neuronx\nx = torch.zeros(2)\ny = cfg['missing']\n")
    return orig, port


def _crash(folder: Path, line: int, message: str) -> dict[str, object]:
    return {"kind": "exception", "message": message, "file": str(folder / "train.py"), "line": line, "traceback": ""}


def test_the_same_exception_at_the_same_source_line_is_the_scripts_own(tmp_path: Path) -> None:
    orig, port = _trees(tmp_path)
    report = {"crash": _crash(port, 4, "KeyError: 'missing'"), "original_crash": _crash(orig, 3, "KeyError: 'missing'")}
    assert check_corpus.same_crash(report, port, orig)


def test_a_different_exception_or_place_is_not(tmp_path: Path) -> None:
    orig, port = _trees(tmp_path)
    port_crash = _crash(port, 4, "KeyError: 'missing'")
    assert not check_corpus.same_crash({"crash": port_crash, "original_crash": None}, port, orig)
    assert not check_corpus.same_crash(
        {"crash": port_crash, "original_crash": _crash(orig, 3, "NameError: name 'cfg' is not defined")}, port, orig)
    assert not check_corpus.same_crash(
        {"crash": port_crash, "original_crash": _crash(orig, 2, "KeyError: 'missing'")}, port, orig)
    # the original timed out: a crash of the port is not the original's
    assert not check_corpus.same_crash(
        {"crash": port_crash, "original_crash": {"kind": "timeout", "message": "", "file": None, "line": None}}, port, orig)
    assert not check_corpus.same_crash({"crash": None, "original_crash": None}, port, orig)


def test_a_printed_traceback_names_the_printed_exception(tmp_path: Path) -> None:
    """Hydra prints the traceback and exits 1: two SystemExits are the same only when what they
    printed is the same exception type."""
    orig, port = _trees(tmp_path)
    port_crash = _crash(port, 4, "SystemExit: exit status 1, after printing torch._dynamo.exc.TorchRuntimeError: x")
    same = _crash(orig, 3, "SystemExit: exit status 1, after printing torch._dynamo.exc.TorchRuntimeError: y")
    other = _crash(orig, 3, "SystemExit: exit status 1, after printing KeyError: 'missing'")
    assert check_corpus.same_crash({"crash": port_crash, "original_crash": same}, port, orig)
    assert not check_corpus.same_crash({"crash": port_crash, "original_crash": other}, port, orig)


def test_a_recompile_on_hardupdates_counter_is_the_librarys(tmp_path: Path) -> None:
    """The guard Dynamo names for torchrl's HardUpdate counter is quoted past the root cause's 200
    characters: the library limit is found in the finding's whole message."""
    guard = ("recompile after warm-up (step 2) of torch_dynamo_resume_in_update_at_167 at train.py:167: 10/0: "
             "target_net_updater.counter == 0" + " " * 30 + "# if self.counter == self.value_network_update_interval:"
             "  # site-packages/torchrl/objectives/utils.py:620 in _step")
    report = {"crash": None, "findings": [{"kind": "recompile", "severity": "error", "file": "train.py", "line": 167,
                                           "message": guard}]}
    cause = check_corpus._root_cause(report)
    assert "utils.py:620" not in cause  # cut at 200 characters
    (tmp_path / "train.py").write_text("pass\n")
    whose = check_corpus.library_limit(f"{cause} {check_corpus._first_error(report)}", tmp_path / "train.py")
    assert whose is not None and whose[0] == "the library's" and "HardUpdate" in whose[1]
    assert check_corpus.library_limit(cause, tmp_path / "train.py") is None
