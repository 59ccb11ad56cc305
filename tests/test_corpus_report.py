"""The corpus report's per-run counts (bench/corpus.py): edits by rule, safe vs review, markers, and
the files the repository-wide rules touched that hold no CUDA string, on a tiny tree ported with
the real CLI (two projects: one with a CUDA-ism, whose other files are then ported too, and one
without, which is left alone)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import corpus  # noqa: E402

pytestmark = pytest.mark.processes

SETUP = 'from setuptools import setup\n\nsetup(name="demo")\n'
TRAIN = """import torch


def main(model, loader, optimizer):
    model = model.cuda()
    for x, y in loader:
        loss = model(x.cuda(), y.cuda())
        loss.backward()
        optimizer.step()
"""
# A training engine with no CUDA string: reached only by a repository-wide port.
ENGINE = """def train_one_epoch(model, loader, optimizer, device):
    model.train()
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")
"""


def _tree(base: Path) -> list[corpus.CorpusFile]:
    layout = {
        "ported": {"setup.py": SETUP, "train.py": TRAIN, "engine.py": ENGINE},
        "cpu": {"setup.py": SETUP, "engine.py": ENGINE},
    }
    files = []
    for project, members in layout.items():
        for rel, text in members.items():
            path = base / "cache" / project / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            files.append(corpus.CorpusFile(project, rel, path, base / "cache" / project))
    return files


def test_counts_by_rule_and_repository_wide(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _tree(tmp_path)
    run = corpus.port_style(files, "neuron", 1, tmp_path / "work")
    rules = corpus.RuleIndex.of_porter()
    s = corpus.summarize(run, rules)

    assert s["crashes"] == 0 and s["not_idempotent"] == []
    # the engine of the project with a CUDA-ism is ported; the same engine in the CPU project is not
    assert s["repo_wide_no_cuda_files"] == ["ported/engine.py"]
    assert s["repo_wide_no_cuda"] == 1
    changed = {r.key: r for r in run["results"] if r.status == "changed"}
    assert "cpu/engine.py" not in changed and "ported/engine.py" in changed
    assert s["repo_wide_files"] == sum(any(c["code"] in rules.port_context for c in r.changes) for r in changed.values())

    # by rule: the per-rule cells add up to the run's totals, and each rule's cell counts its own changes
    table = s["by_rule"]
    assert sum(cell["safe"] for cell in table.values()) == s["edits_safe"]
    assert sum(cell["review"] for cell in table.values()) == s["edits_review"]
    assert sum(cell["markers"] for cell in table.values()) == s["markers"]
    engine = changed["ported/engine.py"].changes
    for name in {rules.names[c["code"]] for c in engine}:
        assert sum(table[name].values()) >= sum(rules.names[c["code"]] == name for c in engine)
    assert "device-strings" in table or "cuda-method" in table  # train.py's .cuda() calls

    # the table prints both
    corpus.print_table({"neuron": dict(s, style="neuron")}, {"files": 5, "projects": 2, "scripts": 0, "step_train": 0, "step_eval": 0}, None)
    printed = capsys.readouterr().out
    assert f"{s['repo_wide_files']} (1 no CUDA string)" in printed
    first = next(iter(table))
    assert f"{first}" in printed and "{safe} / {review} / {markers}".format(**table[first]) in printed


def test_by_rule_counts_each_kind(tmp_path: Path) -> None:
    rules = corpus.RuleIndex({"NRN101": "device-strings", "NRN603": "host-sync-logging"}, frozenset({"NRN603"}))
    changes = [
        {"code": "NRN101", "kind": "edit", "safety": "safe"},
        {"code": "NRN101", "kind": "edit", "safety": "safe"},
        {"code": "NRN603", "kind": "edit", "safety": "review"},
        {"code": "NRN603", "kind": "marker", "safety": "review"},
    ]
    results = [
        corpus.FileResult("p/a.py", "changed", changes=changes[:2], cuda_string=True),
        corpus.FileResult("p/b.py", "changed", changes=changes[2:], cuda_string=False),
        corpus.FileResult("p/c.py", "unchanged"),
    ]
    assert corpus.by_rule(results, rules) == {
        "device-strings": {"safe": 2, "review": 0, "markers": 0},
        "host-sync-logging": {"safe": 0, "review": 1, "markers": 1},
    }
    assert corpus.repo_wide(results, rules) == (["p/b.py"], ["p/b.py"])
