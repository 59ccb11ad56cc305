"""``porter.api``: migrate as a library call (issue 21.1), driven without the command."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from porter.api import FileOutcome, MigrateError, MigrateOptions, Migration, migrate_paths
from porter.engine.results import Failure, Success, Unchanged

CUDA = b"import torch\nx = torch.zeros(2).cuda()\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_bytes(CUDA)
    (root / "pkg" / "clean.py").write_bytes(b"print(1)\n")
    (root / "broken.py").write_bytes(b"def f(:\n    x.cuda()\n")
    (root / "notes.txt").write_bytes(b"hello\n")
    return root


def test_migrate_paths_yields_outcomes_in_order_and_writes_nothing_by_default(tree: Path) -> None:
    said: list[str] = []
    outcomes = list(migrate_paths(MigrateOptions(paths=(str(tree),), cache=False), said.append))
    assert all(isinstance(outcome, FileOutcome) for outcome in outcomes)
    assert [outcome.relative for outcome in outcomes] == ["broken.py", "train.py", "pkg/clean.py"]
    kinds = {outcome.relative: type(outcome.result) for outcome in outcomes}
    assert kinds == {"broken.py": Failure, "pkg/clean.py": Unchanged, "train.py": Success}
    changed = outcomes[1]
    assert changed.diff.startswith(f"--- a/{str(tree / 'train.py').lstrip('/')}\n") and '+x = torch.zeros(2).to("neuron")' in changed.diff
    assert (tree / "train.py").read_bytes() == CUDA and said == []
    quiet = list(migrate_paths(MigrateOptions(paths=(str(tree / "train.py"),), cache=False, diffs=False)))
    assert isinstance(quiet[0].result, Success) and quiet[0].diff == ""  # not asked for, not computed


def test_options_are_frozen_and_sinks_follow_them(tree: Path, tmp_path: Path) -> None:
    options = MigrateOptions(paths=(str(tree),), out_dir=str(tmp_path / "out"), patch_file=str(tmp_path / "p.diff"), cache=False, diffs=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.write = True  # type: ignore[misc]
    migration = Migration(options, lambda line: None)
    outcomes = list(migration)
    assert migration.total == len(outcomes) == 3 and migration.outputs.failed == []
    assert all(bool(outcome.diff) == isinstance(outcome.result, Success) for outcome in outcomes)  # for the patch
    assert b'.to("neuron")' in (tmp_path / "out" / "train.py").read_bytes()
    assert (tmp_path / "out" / "notes.txt").read_bytes() == b"hello\n"  # the mirror sink's finish
    assert (tmp_path / "p.diff").read_text().startswith("--- a/train.py\n")


def test_stopping_early_finishes_no_sink(tree: Path, tmp_path: Path) -> None:
    options = MigrateOptions(paths=(str(tree),), out_dir=str(tmp_path / "out"), cache=False)
    outcomes = migrate_paths(options, lambda line: None)
    next(outcomes)
    outcomes.close()
    assert not (tmp_path / "out" / "notes.txt").exists()


def test_settings_override_the_configuration_and_bad_options_raise(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.porter]\nstyle = "accelerator"\n')
    by_file = {o.relative: o for o in migrate_paths(MigrateOptions(paths=(str(tree),), cache=False), lambda line: None)}
    given = {o.relative: o for o in migrate_paths(MigrateOptions(paths=(str(tree),), style="neuron", cache=False), lambda line: None)}
    assert "accelerator" in by_file["train.py"].diff and "accelerator" not in given["train.py"].diff
    with pytest.raises(MigrateError, match="exclusive"):
        Migration(MigrateOptions(paths=(str(tree),), write=True, out_dir="x"))
    with pytest.raises(MigrateError, match="unknown format"):
        Migration(MigrateOptions(paths=(str(tree),), reports=("r.txt",)))
