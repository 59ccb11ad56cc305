"""--report FILE.json / .sarif / .md: contents, and the SARIF validated against the official schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from porter.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]
VENDORED_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
SHARED_SCHEMA = REPO_ROOT.parent / "shared" / "reference" / "sarif-schema-2.1.0.json"

TRAIN = b"""import torch
model = torch.nn.Linear(2, 2).cuda()
torch.cuda.ipc_collect()
x = torch.randn(2, 2, device="cuda")
"""


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture()
def reports(tmp_path: Path) -> dict[str, Path]:
    for repo in ("alpha", "beta"):
        (tmp_path / repo).mkdir()
        (tmp_path / repo / "train.py").write_bytes(TRAIN)
        (tmp_path / repo / "clean.py").write_bytes(b"import torch\n")
    (tmp_path / "beta" / "broken.py").write_bytes(b"def f(:\n    x.cuda()\n")
    out = {ext: tmp_path / f"report.{ext}" for ext in ("json", "sarif", "md")}
    args = ["migrate", "-q", "--select", "NRN1", str(tmp_path / "alpha"), str(tmp_path / "beta")]
    assert main([*args, *[f"--report={path}" for path in out.values()]]) == 2  # broken.py
    return out


def _schema() -> dict[str, object]:
    # The shared reference (beside the repository in CI) and the vendored copy must agree.
    vendored = json.loads(VENDORED_SCHEMA.read_text())
    if SHARED_SCHEMA.exists():
        assert json.loads(SHARED_SCHEMA.read_text()) == vendored
    return vendored


def test_sarif_is_valid_and_complete(reports: dict[str, Path]) -> None:
    sarif = json.loads(reports["sarif"].read_text())
    jsonschema.validate(sarif, _schema())
    run = sarif["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert {"NRN101", "NRN102", "NRN104"} == set(rules)  # compact: only the codes the results use
    assert "What it does:" in rules["NRN102"]["help"]["text"]
    assert rules["NRN102"]["helpUri"].endswith(".py") and "markdown" not in rules["NRN102"]["help"]
    results = run["results"]
    assert sorted((r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results) == sorted(
        [("NRN102", 2), ("NRN104", 3), ("NRN101", 4)] * 2
    )
    marker = next(r for r in results if r["ruleId"] == "NRN104")
    assert marker["level"] == "warning"
    for result in results:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert location["uri"] == "train.py" and location["uriBaseId"] in run["originalUriBaseIds"]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert len(notes) == 1 and "broken.py" in notes[0]["message"]["text"]
    assert run["invocations"][0]["executionSuccessful"] is False


def test_sarif_validator_rejects_a_broken_document(reports: dict[str, Path]) -> None:
    sarif = json.loads(reports["sarif"].read_text())
    sarif["runs"][0]["results"][0]["level"] = "loud"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(sarif, _schema())


def test_json_has_changes_failures_and_effort_per_repo(reports: dict[str, Path]) -> None:
    data = json.loads(reports["json"].read_text())
    assert data["totals"]["files"] == 5 and data["totals"]["changed"] == 2 and data["totals"]["failed"] == 1
    assert {(c["code"], c["path"], c["line"], c["safety"]) for c in data["changes"]} >= {("NRN102", "train.py", 2, "safe"), ("NRN104", "train.py", 3, "review")}
    assert data["failures"][0]["path"] == "broken.py" and data["failures"][0]["kind"] == "parse"
    alpha, beta = data["repos"]
    assert alpha["root"].endswith("alpha") and beta["root"].endswith("beta")
    assert alpha["changed"] == 1 and alpha["failed"] == 0 and beta["failed"] == 1
    # 2 safe edits + 1 marker (5) = 7; beta adds a failure (8)
    assert alpha["effort"]["score"] == 7 and alpha["effort"]["level"] == "small"
    assert beta["effort"]["score"] == 15 and beta["effort"]["level"] == "medium"
    assert alpha["by_code"] == {"NRN101": 1, "NRN102": 1, "NRN104": 1}


def test_markdown_is_a_pr_summary(reports: dict[str, Path]) -> None:
    text = reports["md"].read_text()
    for heading in ("# Port to AWS Trainium", "### What changed, by rule", "### Needs review", "### By file", "### Not ported (errors)"):
        assert heading in text
    assert "- [ ] `train.py:3` NRN104 (marker left)" in text
    assert "| NRN102 |" in text


def test_unknown_report_format_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.py").write_bytes(TRAIN)
    assert main(["migrate", "-q", str(tmp_path), "--report", str(tmp_path / "r.xml")]) == 2
    assert "unknown format" in capsys.readouterr().err
    assert (tmp_path / "t.py").read_bytes() == TRAIN
