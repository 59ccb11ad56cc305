"""``--out`` never writes through a link in the output folder (issue 14.2) and is a faithful copy:
modes kept, links reproduced as links, an output folder on its inputs refused (issue 14.4)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from porter.cli import main

CUDA = b"import torch\nx = torch.zeros(2).cuda()\n"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "train.py").write_bytes(CUDA)
    (src / "data.txt").write_bytes(b"new data\n")
    (src / "clean.py").write_bytes(b"print(1)\n")
    (src / "sub" / "cfg.json").write_bytes(b"{}\n")
    return src


def test_links_already_in_the_output_are_never_written_through(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _source(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("victim.txt", "victim.py", "victim_clean.py"):
        (outside / name).write_bytes(b"precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "data.txt").symlink_to(outside / "victim.txt")  # a non-Python file's destination
    (out / "train.py").symlink_to(outside / "victim.py")  # a ported file's destination
    (out / "clean.py").symlink_to(outside / "victim_clean.py")  # an unchanged Python file's destination
    (out / "sub").symlink_to(outside, target_is_directory=True)  # a folder of the output
    code = main(["migrate", "-q", str(src), "--out", str(out)])
    err = capsys.readouterr().err
    assert sorted(os.listdir(outside)) == sorted(["victim.txt", "victim.py", "victim_clean.py"])
    assert all((outside / name).read_bytes() == b"precious\n" for name in os.listdir(outside))
    # a link where a file goes is replaced by the file; a folder that is a link is refused
    for name, data in (("data.txt", b"new data\n"), ("clean.py", b"print(1)\n")):
        assert not (out / name).is_symlink() and (out / name).read_bytes() == data
    assert not (out / "train.py").is_symlink() and b'.to("neuron")' in (out / "train.py").read_bytes()
    assert code == 2 and "sub is a symbolic link in the output folder" in err
    assert (out / "sub").is_symlink()


def test_modes_are_kept_and_links_reproduced(tmp_path: Path) -> None:
    src = _source(tmp_path)
    (src / "run.py").write_bytes(b"#!/usr/bin/env python\n" + CUDA)
    (src / "run.py").chmod(0o755)
    (src / "tool.sh").write_bytes(b"#!/bin/sh\n")
    (src / "tool.sh").chmod(0o750)
    (src / "latest.py").symlink_to("train.py")  # a link to a ported file
    (src / "cfg").symlink_to("sub", target_is_directory=True)  # a link to a folder
    (src / "dangling.txt").symlink_to("/nonexistent/target")
    out = tmp_path / "out"
    assert main(["migrate", "-q", str(src), "--out", str(out)]) == 0
    assert b'.to("neuron")' in (out / "run.py").read_bytes()
    assert stat.S_IMODE((out / "run.py").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "tool.sh").stat().st_mode) == 0o750
    for name, target in (("latest.py", "train.py"), ("cfg", "sub"), ("dangling.txt", "/nonexistent/target")):
        assert (out / name).is_symlink() and os.readlink(out / name) == target, name
    assert b'.to("neuron")' in (out / "latest.py").read_bytes()  # resolves to the ported copy
    # a re-run rewrites nothing
    before = {p: p.lstat().st_mtime_ns for p in out.rglob("*")}
    assert main(["migrate", "-q", str(src), "--out", str(out)]) == 0
    assert before == {p: p.lstat().st_mtime_ns for p in out.rglob("*")}


@pytest.mark.parametrize("where", ["same", "parent", "file_folder"])
def test_out_on_an_input_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    src = _source(tmp_path)
    target, out = {
        "same": (src, src),
        "parent": (src / "sub", src),
        "file_folder": (src / "train.py", src),
    }[where]
    before = {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
    assert main(["migrate", "-q", str(target), "--out", str(out)]) == 2
    assert "is, or contains, the input" in capsys.readouterr().err
    assert before == {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
