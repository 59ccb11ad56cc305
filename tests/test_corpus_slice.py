"""The fast slice of the real-world corpus (bench/corpus.py), ported with the real CLI in both styles.

The slice (the manifest's fixed ``slice`` list: step loops of several projects and their CUDA-heavy
helpers) is downloaded from PyPI at test time into the corpus cache and checked against the
manifest's sha256. It must port with 0 crashes; every ported file re-parses, compiles where its
original compiled, and ports to itself; every file left unchanged is byte-identical. Skipped only
when the registry cannot be reached. The whole corpus is ``python bench/corpus.py``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import corpus  # noqa: E402

pytestmark = pytest.mark.corpus

# Porter bugs the slice finds today, each filed for the engineers who own the rule. Strict: when a
# fix lands the test fails until the entry is removed, so this list cannot hide a new failure.
KNOWN_NOT_IDEMPOTENT: dict[str, dict[str, str]] = {
    "neuron": {},
    "accelerator": {},
}


def _or_skip(error: corpus.CorpusError) -> None:
    if error.unreachable:
        pytest.skip(f"the package registry cannot be reached: {error}")
    raise error


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    try:
        return corpus.run(True, list(corpus.STYLES), 2, False, tmp_path_factory.mktemp("corpus"), log=lambda _: None)
    except corpus.CorpusError as error:
        _or_skip(error)
        raise


def test_slice_is_the_documented_size_and_spread(result: dict[str, Any]) -> None:
    info = result["corpus"]
    assert 30 <= info["files"] <= 50
    loops = {key.split("/")[0] for key in info["step_loop_files"]}
    assert len(loops) >= 6, f"step loops only from {sorted(loops)}"


@pytest.mark.parametrize("style", corpus.STYLES)
def test_port_is_safe_on_real_code(result: dict[str, Any], style: str) -> None:
    s = result["summaries"][style]
    assert s["ported"] > 0, "porter changed nothing on the slice: it did not run"
    assert s["crashed"] == []
    assert s["missing_outputs"] == 0
    assert s["not_reparsed"] == []
    assert s["not_compiled"] == []
    known = KNOWN_NOT_IDEMPOTENT[style]
    assert [k for k in s["not_idempotent"] if k not in known] == [], "new non-idempotent ports"
    fixed = sorted(set(known) - set(s["not_idempotent"]))
    assert not fixed, f"now idempotent, remove from KNOWN_NOT_IDEMPOTENT: {fixed}"
    assert s["not_identical"] == []
    assert s["reparse"][0] == s["reparse"][1] == s["ported"]


def test_step_loop_detector() -> None:
    train = b"def step(b):\n    loss = m(b)\n    loss.backward()\n\nfor b in loader:\n    step(b)\n"
    direct = b"while True:\n    out = model(x)\n    opt.step()\n"
    evaluate = b"for x, y in loader:\n    loss = criterion(model(x), y)\n"
    nested_only = b"for f in fs:\n    def g():\n        loss.backward()\n"
    assert corpus.facts(train).step_loop == "train"
    assert corpus.facts(direct).step_loop == "train"
    assert corpus.facts(evaluate).step_loop == "eval"
    assert corpus.facts(nested_only).step_loop is None
    assert corpus.facts(b"for x in y:\n    scheduler.step()\n").step_loop is None
    script = b"import argparse\nif __name__ == '__main__':\n    argparse.ArgumentParser().parse_args()\n"
    assert corpus.facts(script).script and not corpus.facts(b"if __name__ == '__main__':\n    pass\n").script


def test_globs() -> None:
    assert corpus.glob_regex("recipes/**/*.py").match("recipes/a.py")
    assert corpus.glob_regex("recipes/**/*.py").match("recipes/dev/a.py")
    assert not corpus.glob_regex("recipes/*.py").match("recipes/dev/a.py")
    assert not corpus.glob_regex("a/*.py").match("a/b.pyc")


def test_cached_data_is_checked(result: dict[str, Any], tmp_path: Path) -> None:
    """A tampered archive is downloaded again; a tampered unpacked file is restored from the archive."""
    projects, _ = corpus.load_manifest()
    project = min(projects, key=lambda p: (corpus.cache_dir() / "archives" / p.file).stat().st_size)
    archives = tmp_path / "archives"
    archives.mkdir()
    shutil.copy(corpus.cache_dir() / "archives" / project.file, archives / project.file)
    with open(archives / project.file, "r+b") as handle:
        handle.seek(1000)
        handle.write(b"\0garbage\0")
    try:
        archive = corpus.fetch(project, tmp_path, log=lambda _: None)
    except corpus.CorpusError as error:
        _or_skip(error)
    assert corpus.sha256_of(archive) == project.sha256
    root = corpus.unpack(project, archive, tmp_path)
    victim = root / corpus.select(project, root)[0]
    original = victim.read_bytes()
    victim.write_bytes(b"tampered\n")
    (root / "not-in-the-archive.py").write_text("x = 1\n")
    corpus.unpack(project, archive, tmp_path)
    assert victim.read_bytes() == original
    assert not (root / "not-in-the-archive.py").exists()


def test_a_wrong_pin_is_a_clear_error(result: dict[str, Any], tmp_path: Path) -> None:
    projects, _ = corpus.load_manifest()
    project = min(projects, key=lambda p: (corpus.cache_dir() / "archives" / p.file).stat().st_size)
    wrong = corpus.Project(project.name, project.version, project.file, "0" * 64, project.root,
                           project.include, project.exclude, project.why)
    with pytest.raises(corpus.CorpusError) as caught:
        corpus.fetch(wrong, tmp_path, log=lambda _: None)
    if caught.value.unreachable:
        pytest.skip(f"the package registry cannot be reached: {caught.value}")
    assert "manifest says" in str(caught.value)
