"""Issue 16 §5: in a directory port of a repository that is being ported (a CUDA-ism in some
file, or code already targeting Neuron), the performance rules run on every Python file,
including the training engine module that has no ``cuda`` string of its own."""

from __future__ import annotations

from pathlib import Path

from porter.api import MigrateOptions, migrate_paths
from porter.engine.results import Success, Unchanged

ENGINE = '''import math


def train_one_epoch(model, loader, optimizer, logger):
    model.train()
    for step, (images, targets) in enumerate(loader):
        loss = model(images, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        logger.info(f"step {step} loss {loss.item():.4f}")
'''

TRAIN = '''import torch

from engine import train_one_epoch


def main(args, model, loader, logger):
    device = torch.device("cuda")
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, logger)
'''

CPU_TRAIN = TRAIN.replace('"cuda"', '"cpu"')


def _outcomes(folder: Path, path: Path | None = None) -> dict[str, object]:
    options = MigrateOptions(paths=(str(path or folder),), cache=False)
    return {Path(o.path).name: o.result for o in migrate_paths(options, lambda line: None)}


def test_engine_module_without_cuda_is_ported_next_to_a_cuda_script(tmp_path: Path) -> None:
    (tmp_path / "engine.py").write_text(ENGINE)
    (tmp_path / "train.py").write_text(TRAIN)
    results = _outcomes(tmp_path)
    engine = results["engine.py"]
    assert isinstance(engine, Success), engine
    assert "cuda" not in ENGINE
    assert {change.code for change in engine.changes} & {"NRN603"}, engine.changes
    assert "if step % LOG_INTERVAL == 0:" in engine.new_text
    assert isinstance(results["train.py"], Success)


def test_repository_with_no_cuda_ism_leaves_the_engine_alone(tmp_path: Path) -> None:
    (tmp_path / "engine.py").write_text(ENGINE)
    (tmp_path / "train.py").write_text(CPU_TRAIN)
    results = _outcomes(tmp_path)
    assert isinstance(results["engine.py"], Unchanged)
    assert isinstance(results["train.py"], Unchanged)


def test_a_file_named_alone_is_not_a_repository_port(tmp_path: Path) -> None:
    (tmp_path / "engine.py").write_text(ENGINE)
    (tmp_path / "train.py").write_text(TRAIN)
    results = _outcomes(tmp_path, tmp_path / "engine.py")
    assert isinstance(results["engine.py"], Unchanged)


def test_a_repository_already_on_neuron_counts(tmp_path: Path) -> None:
    (tmp_path / "engine.py").write_text(ENGINE)
    (tmp_path / "train.py").write_text(CPU_TRAIN.replace('"cpu"', '"neuron"'))
    assert isinstance(_outcomes(tmp_path)["engine.py"], Success)


def test_each_project_of_a_folder_of_checkouts_counts_alone(tmp_path: Path) -> None:
    for name, train in (("gpu_project", TRAIN), ("cpu_project", CPU_TRAIN)):
        project = tmp_path / name
        (project / "src").mkdir(parents=True)
        (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
        (project / "src" / "engine.py").write_text(ENGINE)
        (project / "train.py").write_text(train)
    options = MigrateOptions(paths=(str(tmp_path),), cache=False)
    results = {str(Path(o.path).relative_to(tmp_path)): o.result for o in migrate_paths(options, lambda line: None)}
    assert isinstance(results["gpu_project/src/engine.py"], Success)
    assert isinstance(results["cpu_project/src/engine.py"], Unchanged)
