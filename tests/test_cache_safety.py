"""A damaged content cache is never written into source files (issue 14.1).

Each case ports a tree once to fill the cache, damages the database, then runs ``--write``
through it: every file must equal a fresh port (no cache), whatever the damage.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from porter.cli import main
from porter.run.cache import DB_NAME

COUNT = 24


def _source(index: int) -> bytes:
    padding = "".join(f"# note {index} {line} {'x' * 40}\n" for line in range(30))  # rows span pages
    return f'import torch\n{padding}x{index} = torch.zeros({index}).cuda()\ny{index} = "cuda:{index % 3}"\n'.encode()


def _tree(path: Path) -> Path:
    path.mkdir()
    for index in range(COUNT):
        (path / f"m{index:02d}.py").write_bytes(_source(index))
    (path / "clean.py").write_bytes(b"import os\nprint(os.sep)\n")
    return path


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, bytes]]:
    """The tree, a cache filled by porting it, and its fresh port: made once, copied per case."""
    base = tmp_path_factory.mktemp("filled")
    tree = _tree(base / "tree")
    expected_tree = base / "expected"
    shutil.copytree(tree, expected_tree)
    assert main(["migrate", "-q", "-j1", "--no-cache", "--write", str(expected_tree)]) == 0
    expected = {path.name: path.read_bytes() for path in expected_tree.iterdir()}
    assert sum(expected[name] != (tree / name).read_bytes() for name in expected) == COUNT
    cache = base / "cache"
    assert main(["migrate", "-q", "-j1", "--cache-dir", str(cache), str(tree)]) == 0  # fills the cache
    assert (cache / DB_NAME).stat().st_size > 16384
    return tree, cache, expected


@pytest.fixture
def setup(filled: tuple[Path, Path, dict[str, bytes]], tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    """A fresh copy of the tree and of its cache (the cache is keyed by content, not by path)."""
    tree, cache, expected = filled
    return shutil.copytree(tree, tmp_path / "tree"), shutil.copytree(cache, tmp_path / "cache"), expected


def _write_through_cache(tree: Path, cache: Path, expected: dict[str, bytes]) -> None:
    code = main(["migrate", "-q", "-j1", "--cache-dir", str(cache), "--write", str(tree)])
    assert code == 0
    for name, data in expected.items():
        assert (tree / name).read_bytes() == data, f"{name}: not the fresh port"


@pytest.mark.parametrize("seed", range(5))
def test_random_bytes_in_the_middle_of_the_database(setup: tuple[Path, Path, dict[str, bytes]], seed: int) -> None:
    tree, cache, expected = setup
    database = cache / DB_NAME
    data = bytearray(database.read_bytes())
    rng = random.Random(seed)
    for _ in range(4):
        start = rng.randrange(len(data) // 4, 3 * len(data) // 4)
        data[start : start + 48] = bytes(rng.randrange(256) for _ in range(48))
    database.write_bytes(bytes(data))
    _write_through_cache(tree, cache, expected)


@pytest.mark.parametrize("replacement", [b'.to("nXuron")', b".to(\xff\xfe\x00)"])
def test_bytes_inside_stored_outputs(setup: tuple[Path, Path, dict[str, bytes]], replacement: bytes) -> None:
    """Damage exactly where SQLite keeps the ported bytes: it has no checksum of its own."""
    tree, cache, expected = setup
    database = cache / DB_NAME
    data = database.read_bytes()
    assert data.count(b'.to("neuron")') >= COUNT
    database.write_bytes(data.replace(b'.to("neuron")', replacement))
    _write_through_cache(tree, cache, expected)


def test_an_altered_new_blob_is_not_used(setup: tuple[Path, Path, dict[str, bytes]]) -> None:
    tree, cache, expected = setup
    db = sqlite3.connect(cache / DB_NAME)
    db.execute("UPDATE results SET new = CAST('import os; os.remove(\"x\")' AS BLOB) WHERE new IS NOT NULL")
    db.commit()
    db.close()
    _write_through_cache(tree, cache, expected)


def test_a_file_that_is_not_a_database_is_discarded_with_one_warning(
    setup: tuple[Path, Path, dict[str, bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    tree, cache, expected = setup
    (cache / DB_NAME).write_bytes(b"garbage" * 5000)
    capsys.readouterr()
    _write_through_cache(tree, cache, expected)
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "discarded" in err
    # the new database works: a re-run of the ported tree is stored, the next one served from it
    for _ in range(2):
        assert main(["migrate", "-q", "-j1", "--cache-dir", str(cache), str(tree)]) == 0
    assert f"({COUNT + 1} from cache)" in capsys.readouterr().err


def test_an_undamaged_copy_is_served_from_the_cache(setup: tuple[Path, Path, dict[str, bytes]], capsys: pytest.CaptureFixture[str]) -> None:
    """The cases above read a damaged cache, not a missed one: the copy made for each is a hit."""
    tree, cache, _ = setup
    capsys.readouterr()
    assert main(["migrate", "-q", "-j1", "--cache-dir", str(cache), str(tree)]) == 0
    assert f"({COUNT + 1} from cache)" in capsys.readouterr().err
