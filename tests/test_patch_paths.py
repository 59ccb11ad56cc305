"""Reports and patches survive any file name (issue 14.8); patch and display paths are computed
per run, relative to the repository or the inputs' common folder (issue 19)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from porter.cli import main

CUDA = b"import torch\nx = torch.zeros(2).cuda()\n"
PORTED = b'import torch\nx = torch.zeros(2).to("neuron")\n'
NAME = os.fsdecode(b"\xffmodel.py")  # not UTF-8: a surrogate escape in Python


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    for key, value in {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@e"}.items():
        monkeypatch.setenv(key, value)


def _applies(patch: Path, folder: Path) -> None:
    """The patch applies in ``folder`` with git apply and with patch -p1 (checked on copies)."""
    for tool in (["git", "apply", "--check", str(patch)], ["patch", "-p1", "--dry-run", "-s", "-i", str(patch)]):
        done = subprocess.run(tool, cwd=folder, capture_output=True)
        assert done.returncode == 0, (tool, done.stdout, done.stderr)
    copy = folder.parent / (folder.name + "-applied")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(folder, copy, symlinks=True)
    subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=copy, check=True)
    assert any(PORTED in path.read_bytes() for path in copy.rglob("*.py"))


def test_a_name_that_is_not_utf8_in_reports_and_patches(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / NAME).write_bytes(CUDA)
    (tree / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + CUDA)
    reports = [tmp_path / name for name in ("r.md", "r.json", "r.sarif")]
    args = ["--patch", str(tmp_path / "p.diff"), *[arg for path in reports for arg in ("--report", str(path))]]
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8:strict"}
    done = subprocess.run([sys.executable, "-m", "porter", "migrate", str(tree), *args], capture_output=True, env=env)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr and b"\\xffmodel.py" in done.stdout  # shown escaped
    assert "\\xffmodel.py" in reports[0].read_text(encoding="utf-8")
    data = json.loads(reports[1].read_text(encoding="utf-8"))
    assert {change["path"] for change in data["changes"]} == {"\\xffmodel.py", "latin.py"}
    json.loads(reports[2].read_text(encoding="utf-8"))
    _applies(tmp_path / "p.diff", tree)  # the patch keeps the name's bytes and latin-1 context
    # --write, then the reports: the ported file is written and the reports are still there
    for path in reports:
        path.unlink()
    done = subprocess.run([sys.executable, "-m", "porter", "migrate", "-q", "--write", str(tree), *args], capture_output=True, env=env)
    assert done.returncode == 0, done.stderr
    assert (tree / NAME).read_bytes() == PORTED and all(path.exists() for path in reports)


def test_patch_paths_for_inputs_outside_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big"
    (big / "sub").mkdir(parents=True)
    (big / "sub" / "train.py").write_bytes(CUDA)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["migrate", "-q", "../big", "--patch", "p.diff"]) == 0
    text = (here / "p.diff").read_text()
    assert "--- a/sub/train.py\n+++ b/sub/train.py\n" in text and ".." not in text
    _applies(here / "p.diff", big)
    # a git repository: relative to its top folder, whichever subfolder is given
    subprocess.run(["git", "init", "-q", str(big)], check=True)
    subprocess.run(["git", "-C", str(big), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(big), "commit", "-qm", "i"], check=True)
    assert main(["migrate", "-q", "../big/sub", "--patch", "q.diff"]) == 0
    assert "--- a/sub/train.py\n" in (here / "q.diff").read_text()
    _applies(here / "q.diff", big)


def test_cached_results_do_not_carry_another_runs_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for repo in ("a", "b"):
        (tmp_path / repo).mkdir()
        (tmp_path / repo / "t.py").write_bytes(CUDA)
    monkeypatch.chdir(tmp_path)
    assert main(["migrate", "-q", "a", "b", "--out", "o"]) == 0
    assert main(["migrate", "-q", "a", "--patch", "a.patch"]) == 0  # served from the cache
    assert (tmp_path / "a.patch").read_text().startswith("--- a/t.py\n+++ b/t.py\n")
    _applies(tmp_path / "a.patch", tmp_path / "a")


def test_an_absolute_path_reads_a_slash_abs_in_the_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.py").write_bytes(CUDA)
    assert main(["migrate", str(tmp_path / "t.py")]) == 0
    out = capsys.readouterr().out
    shown = str(tmp_path / "t.py").lstrip("/")
    assert f"--- a/{shown}\n+++ b/{shown}\n" in out and "a//" not in out
