"""Hostile inputs: each gets a one-line error naming the file and reason, the batch goes on,
exit code 2, and nothing is lost."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from porter.cli import main
from porter.engine.core import migrate_file
from porter.engine.results import Failure, Success
from porter.engine.textio import SourceError, write_atomic

GOOD = b"import torch\nx = torch.ones(1).cuda()\n"


def _run_write(tree: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["migrate", "--write", str(tree)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("syntax.py", b"def broken(:\n    x.cuda()\n", "syntax error"),
        ("py2.py", b'print "cuda"\nx.cuda()\n', "syntax error"),
        ("latin_no_cookie.py", b"# caf\xe9\nx.cuda()\n", "not valid utf-8"),
        ("binary.py", b"\x7fELF\x00\x00cuda\x00", "binary file"),
        ("bad_cookie.py", b"# -*- coding: klingon -*-\nx.cuda()\n", "encoding"),
    ],
)
def test_bad_file_is_reported_and_the_batch_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, reason: str
) -> None:
    (tmp_path / name).write_bytes(content)
    (tmp_path / "good.py").write_bytes(GOOD)
    code, err = _run_write(tmp_path, capsys)
    assert code == 2
    lines = [line for line in err.splitlines() if name in line]
    assert len(lines) == 1 and reason in lines[0], err
    assert (tmp_path / name).read_bytes() == content
    assert b'.to("neuron")' in (tmp_path / "good.py").read_bytes()


def test_latin1_with_cookie_round_trips(tmp_path: Path) -> None:
    source = b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\nx = torch.ones(1).cuda()\n"
    path = tmp_path / "latin.py"
    path.write_bytes(source)
    assert main(["migrate", "--write", "-q", str(path)]) == 0
    assert path.read_bytes() == source.replace(b".cuda()", b'.to("neuron")')


def test_empty_file_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "empty.py"
    path.write_bytes(b"")
    assert main(["migrate", "--check", str(path)]) == 0
    assert path.read_bytes() == b""


def test_twenty_megabyte_file_is_refused_without_reading_it_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.py"
    with open(path, "wb") as handle:
        handle.write(b"x = 1  # cuda\n" * (20 * 1024 * 1024 // 14))
    assert main(["migrate", "--write", str(path)]) == 2
    assert "over the" in capsys.readouterr().err


def test_symlink_loop_and_links_out_of_the_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.py").write_bytes(GOOD)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.py").write_bytes(GOOD)
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    (tree / "escape").symlink_to(outside, target_is_directory=True)
    (tree / "link.py").symlink_to(outside / "victim.py")
    code = main(["migrate", "--write", str(tree)])
    err = capsys.readouterr().err
    assert code == 2 and "link.py: error: symbolic link" in err
    assert (outside / "victim.py").read_bytes() == GOOD  # never written through
    assert (tree / "link.py").is_symlink()
    assert b'.to("neuron")' in (tree / "good.py").read_bytes()


def test_fifo_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    result = migrate_file(str(fifo))
    assert isinstance(result, Failure) and "not a regular file" in result.reason


@pytest.mark.processes
def test_unreadable_file(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        path = tmp_path / "secret.py"
        path.write_bytes(GOOD)
        path.chmod(0)
        result = migrate_file(str(path))
        assert isinstance(result, Failure) and "permission denied" in result.reason
        return
    # root reads everything: check as an unprivileged user in a child process.
    folder = Path(tempfile.mkdtemp())
    try:
        folder.chmod(0o755)
        path = folder / "secret.py"
        path.write_bytes(GOOD)
        path.chmod(0)
        script = (
            "import os, sys; from porter.engine.core import migrate_file;"  # import first: root's stdlib may be private
            "os.setgid(65534); os.setuid(65534);"
            "r = migrate_file(sys.argv[1]); print(type(r).__name__, r.reason)"
        )
        out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
        assert out.stdout.startswith("Failure permission denied"), out.stdout + out.stderr
    finally:
        path.chmod(0o644)
        path.unlink()
        folder.rmdir()


def test_file_deleted_between_read_and_write(tmp_path: Path) -> None:
    path = tmp_path / "gone.py"
    path.write_bytes(GOOD)
    result = migrate_file(str(path))
    assert isinstance(result, Success)
    path.unlink()
    with pytest.raises(SourceError, match="deleted"):
        write_atomic(str(path), result.new, expected=result.old)
    assert not path.exists()


def test_file_changed_between_read_and_write(tmp_path: Path) -> None:
    path = tmp_path / "moving.py"
    path.write_bytes(GOOD)
    result = migrate_file(str(path))
    assert isinstance(result, Success)
    path.write_bytes(GOOD + b"# edited by a human meanwhile\n")
    with pytest.raises(SourceError, match="changed after it was read"):
        write_atomic(str(path), result.new, expected=result.old)
    assert path.read_bytes().endswith(b"meanwhile\n")


@pytest.mark.parametrize("failing", ["write", "fsync", "replace"])
def test_full_disk_leaves_the_original_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str) -> None:
    path = tmp_path / "full.py"
    path.write_bytes(GOOD)

    def no_space(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if failing == "write":
        real_fdopen = os.fdopen

        class FullDisk:
            def __init__(self, fd: int, mode: str) -> None:
                self.handle = real_fdopen(fd, mode)

            def __enter__(self) -> FullDisk:
                return self

            def __exit__(self, *exc: object) -> None:
                self.handle.close()

            def write(self, data: bytes) -> int:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "fdopen", FullDisk)
    else:
        monkeypatch.setattr(os, failing, no_space)
    with pytest.raises(SourceError, match="original left as it was"):
        write_atomic(str(path), b"ported\n", expected=GOOD)
    monkeypatch.undo()
    assert path.read_bytes() == GOOD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full.py"]


def _tree_of(tmp_path: Path, count: int) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    for index in range(count):
        (tree / f"m{index:03d}.py").write_bytes(GOOD + f"y{index} = x.cuda()\n".encode())
    return tree


def _expected(index: int) -> bytes:
    return (GOOD + f"y{index} = x.cuda()\n".encode()).replace(b".cuda()", b'.to("neuron")')


@pytest.mark.processes
def test_sigterm_during_write_leaves_every_file_old_or_new(tmp_path: Path) -> None:
    import signal
    import time

    count = 60
    tree = _tree_of(tmp_path, count)
    process = subprocess.Popen(
        [sys.executable, "-m", "porter", "migrate", "--write", "-j1", "--no-cache", "--no-diff", str(tree)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:  # wait for the first written file
        # Only the ported files themselves: a temp file listed here can be renamed before it is read.
        if any(b"neuron" in path.read_bytes() for path in tree.glob("m*.py")):
            break
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    states = []
    for index in range(count):
        data = (tree / f"m{index:03d}.py").read_bytes()
        original = GOOD + f"y{index} = x.cuda()\n".encode()
        assert data in (original, _expected(index)), f"m{index:03d}.py is half-written"
        states.append(data == _expected(index))
    assert not list(tree.glob(".*porter-tmp"))
    if process.returncode == 130:  # interrupted mid-batch (it may also have finished first)
        assert "interrupted after" in err and "fully ported" in err
        assert not all(states)


@pytest.mark.processes
def test_two_processes_writing_one_tree_do_not_interleave(tmp_path: Path) -> None:
    count = 40
    tree = _tree_of(tmp_path, count)
    command = [sys.executable, "-m", "porter", "migrate", "--write", "-j1", "--no-cache", "-q", str(tree)]
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    errors = first.communicate(timeout=300)[1] + second.communicate(timeout=300)[1]
    assert first.returncode in (0, 2) and second.returncode in (0, 2), errors
    for index in range(count):
        assert (tree / f"m{index:03d}.py").read_bytes() == _expected(index)
    # A loser of the race is told the file changed under it; it never writes over the winner.
    for line in errors.splitlines():
        if ": error:" in line:
            assert "changed after it was read" in line, line
    assert not list(tree.glob(".*porter-tmp"))


def test_the_depth_check_counts_the_levels_ast_iter_child_nodes_gives() -> None:
    """The depth check refuses exactly the trees deeper than MAX_DEPTH levels of
    ``ast.iter_child_nodes`` (chains on both sides of the bound, nested lists, nested blocks)."""
    import ast

    from porter.engine.core import MAX_DEPTH, _too_deep

    def levels(tree: ast.AST) -> int:
        level, depth = [tree], 0
        while level:
            level = [child for node in level for child in ast.iter_child_nodes(node)]
            depth += 1
        return depth

    sources = [f"x{'.cuda()' * n}\n" for n in (245, 246, 247, 248, 249, 250)] + [f"a = {'[' * n}{']' * n}\n" for n in (150, 190)]
    sources.append("def f():\n" + "".join("    " * (i + 1) + "if x:\n" for i in range(95)) + "    " * 96 + "pass\n")
    for source in sources:
        reason, tree = _too_deep(source)
        assert tree is not None
        assert (reason is not None) == (levels(tree) > MAX_DEPTH), source[:40]
    assert any(_too_deep(source)[0] for source in sources) and not all(_too_deep(source)[0] for source in sources)
