"""The CLI through ``main(argv)``: every flag of migrate, rules, explain and the exit codes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from porter import __version__
from porter.cli import main

CUDA_SCRIPT = b'import torch\nx = torch.zeros(2).cuda()\nprint("cuda is fun")\n'
CPU_SCRIPT = b"import torch\nx = torch.zeros(2)\n"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "train.py").write_bytes(CUDA_SCRIPT)
    (tmp_path / "pkg" / "cpu.py").write_bytes(CPU_SCRIPT)
    (tmp_path / "pkg" / "notes.txt").write_text("cuda")
    return tmp_path


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert __version__ in capsys.readouterr().out


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("migrate", "rules", "explain"):
        assert name in out


def test_diff_is_default_and_writes_nothing(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", str(tree)]) == 0
    out = capsys.readouterr().out
    assert '+x = torch.zeros(2).to("neuron")' in out
    assert f"{tree / 'train.py'}:2 NRN102 " in out
    assert (tree / "train.py").read_bytes() == CUDA_SCRIPT


def test_write_applies_in_place_and_leaves_clean_files_identical(tree: Path) -> None:
    before = os.stat(tree / "pkg" / "cpu.py").st_mtime_ns
    assert main(["migrate", "--write", str(tree)]) == 0
    assert b'.to("neuron")' in (tree / "train.py").read_bytes()
    assert b'print("cuda is fun")' in (tree / "train.py").read_bytes()
    assert (tree / "pkg" / "cpu.py").read_bytes() == CPU_SCRIPT
    assert os.stat(tree / "pkg" / "cpu.py").st_mtime_ns == before
    assert not list(tree.rglob("*.porter-tmp"))
    # Second run: nothing left to port.
    assert main(["migrate", "--check", str(tree)]) == 0


def test_out_writes_a_mirror_tree(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    out = tmp_path_factory.mktemp("out")
    assert main(["migrate", str(tree), "--out", str(out)]) == 0
    assert b'.to("neuron")' in (out / "train.py").read_bytes()
    assert (out / "pkg" / "cpu.py").read_bytes() == CPU_SCRIPT
    assert (tree / "train.py").read_bytes() == CUDA_SCRIPT


def test_check_exits_1_when_a_file_would_change(tree: Path) -> None:
    assert main(["migrate", "--check", "-q", str(tree)]) == 1
    assert main(["migrate", "--check", "-q", str(tree / "pkg")]) == 0


def test_select_and_ignore_take_prefixes(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--check", "--select", "NRN2", str(tree)]) == 0
    assert main(["migrate", "--check", "--select", "NRN1", "--ignore", "NRN102", str(tree)]) == 0
    assert main(["migrate", "--check", "--select", "nrn10", str(tree)]) == 1
    assert main(["migrate", "--check", "--ignore", "NRN3,NRN4", str(tree)]) == 1


def test_write_and_out_are_exclusive(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--write", "--out", str(tree / "o"), str(tree)]) == 2
    assert "exclusive" in capsys.readouterr().err


def test_errors_exit_2_and_the_batch_goes_on(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "broken.py").write_bytes(b"def f(:\n    x.cuda()\n")
    (tree / "blob.py").write_bytes(b"\x00\x01\x02cuda")
    (tree / "latin.py").write_bytes(b"x = '\xe9'  # cuda\n")
    assert main(["migrate", "--write", str(tree)]) == 2
    err = capsys.readouterr().err
    assert "broken.py: error: syntax error" in err
    assert "blob.py: error: binary file" in err
    assert "latin.py: error: not valid utf-8" in err
    assert b'.to("neuron")' in (tree / "train.py").read_bytes()


def test_missing_path_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", str(tmp_path / "nope.py")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_no_paths_is_a_usage_error() -> None:
    assert main(["migrate"]) == 2


def test_read_only_file_is_not_written(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tree / "train.py"
    target.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        assert main(["migrate", "--write", str(target)]) == 2
        assert "read-only" in capsys.readouterr().err
        assert target.read_bytes() == CUDA_SCRIPT
    finally:
        target.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_symlink_is_refused(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tree / "link.py"
    link.symlink_to(tree / "train.py")
    assert main(["migrate", "--write", str(tree)]) == 2
    assert "link.py: error: symbolic link" in capsys.readouterr().err
    assert link.is_symlink()


def test_rules_lists_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    from porter.engine.registry import all_rules

    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    for rule in all_rules():
        for code in rule.all_codes():
            assert code in out


def test_explain_prints_the_sections(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "nrn102"]) == 0
    out = capsys.readouterr().out
    for section in ("What it does:", "Why:", "Before:", "After:", "Safety:"):
        assert section in out


def test_explain_unknown_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "NRN999"]) == 2


def test_every_rule_doc_has_the_sections() -> None:
    from porter.engine.registry import all_rules

    for rule in all_rules():
        doc = rule.__doc__ or ""
        for section in ("What it does:", "Why:", "Before:", "After:", "Safety:"):
            assert section in doc, f"{rule.code} docstring lacks {section!r}"
