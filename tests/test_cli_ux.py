"""What a ruff user expects of ``porter migrate``: --fix, --statistics, and saying what happened
when there is nothing to port (no paths, an empty folder, a file porter does not port)."""

from __future__ import annotations

from pathlib import Path

import pytest

from porter.cli import main

CUDA = 'import torch\nx = torch.zeros(1, device="cuda").cuda()\ny = torch.ones(1).cuda()\n'


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def test_fix_is_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "t.py"
    script.write_text(CUDA)
    assert main(["migrate", "--fix", "--no-progress", str(script)]) == 0
    assert '.to("neuron")' in script.read_text()
    capsys.readouterr()
    assert main(["migrate", "--help"]) == 0
    assert "--fix" in capsys.readouterr().out


def test_no_paths_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate"]) == 2
    assert "no paths given" in capsys.readouterr().err


def test_folder_with_nothing_portable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    assert main(["migrate", "--no-progress", str(tmp_path)]) == 0
    assert f"nothing portable found under {tmp_path}" in capsys.readouterr().err
    (tmp_path / "a.py").write_text("x = 1\n")
    assert main(["migrate", "--no-progress", str(tmp_path)]) == 0
    assert "nothing portable" not in capsys.readouterr().err


def test_a_file_porter_does_not_port(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "x.txt"
    text.write_text("torch cuda\n")
    assert main(["migrate", str(text)]) == 2
    assert f"{text}: not a file porter ports" in capsys.readouterr().err
    pins = tmp_path / "requirements.txt"
    pins.write_text("torch==2.1.0+cu121\n")
    assert main(["migrate", "--python-only", str(pins)]) == 2
    assert f"{pins}: not a file porter ports with --python-only" in capsys.readouterr().err
    assert main(["migrate", "--no-progress", str(pins)]) == 0
    assert "requirements.txt" in capsys.readouterr().out


def test_a_python_script_without_suffix_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train"
    script.write_text("#!/usr/bin/env python\nx = 1\n")
    assert main(["migrate", "--no-progress", str(script)]) == 0
    capsys.readouterr()


def test_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text(CUDA)
    (tmp_path / "b.py").write_text(CUDA)
    assert main(["migrate", "--statistics", "-q", "--no-progress", "-j1", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("   4  NRN102  .cuda(")
    assert lines[1].startswith("   2  NRN101  CUDA device strings")
    assert len(lines) == 2
