"""``porter migrate`` as a user meets it: whole repositories by default, ``--safe-only``,
``--interactive``, the ``--write`` summary, output formats on standard output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from porter.cli import main

CUDA = 'import torch\nx = torch.zeros(1, device="cuda").cuda()\ny = torch.ones(1).cuda()\n'
PINS = "torch==2.1.0+cu121\n"
LAUNCHER = "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,1 python train.py\n"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def _repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.py").write_text(CUDA)
    (root / "requirements.txt").write_text(PINS)
    (root / "run.sh").write_text(LAUNCHER)
    return root


def test_a_folder_is_ported_whole_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path / "r")
    assert main(["migrate", "--write", "-q", "--no-progress", str(repo)]) == 0
    assert "cu121" not in (repo / "requirements.txt").read_text()
    assert (repo / "run.sh").read_text() != LAUNCHER
    assert '.to("neuron")' in (repo / "train.py").read_text()
    assert "3 files ported" in capsys.readouterr().err


def test_python_only_opts_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path / "r")
    assert main(["migrate", "--write", "-q", "--no-progress", "--python-only", str(repo)]) == 0
    assert (repo / "requirements.txt").read_text() == PINS and (repo / "run.sh").read_text() == LAUNCHER
    assert "1 file ported" in capsys.readouterr().err
    assert main(["migrate", "--files", "--python-only", str(repo)]) == 2


def test_a_python_path_stays_python_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path / "r")
    assert main(["migrate", "--write", "-q", "--no-progress", str(repo / "train.py")]) == 0
    assert (repo / "requirements.txt").read_text() == PINS and (repo / "run.sh").read_text() == LAUNCHER
    assert "1 file ported" in capsys.readouterr().err


def test_discovering_non_python_files_imports_nothing_heavy(tmp_path: Path) -> None:
    """A fully cached run must not load libcst: deciding which files to port must not either."""
    repo = _repo(tmp_path / "r")
    code = (
        "import sys\nfrom porter.run.migrate import MigrateOptions, Migration\n"
        f"m = Migration(MigrateOptions(paths=({str(repo)!r},)))\n"
        "print(sorted(t.relative for t, _ in m._targets()))\n"
        "print([name for name in ('libcst', 'torch', 'yaml') if name in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["['requirements.txt', 'run.sh', 'train.py']", "[]"]
