"""porter card: model cards written from check reports with huggingface_hub's ModelCard."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from huggingface_hub import ModelCard

from porter.audit import card
from porter.cli import main

DATA = Path(__file__).parent / "data" / "cards"
OURS = {"tags", card.METADATA_KEY}


def folder_with(tmp_path: Path, readme: str | None = "existing_README.md") -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    if readme:
        shutil.copy(DATA / readme, folder / "README.md")
    return folder


def cli_card(report: str, folder: Path, *extra: str) -> int:
    return main(["card", str(DATA / report), str(folder), *extra])


def split(text: str) -> tuple[str, str, str]:
    """(body before the section, the section, body after it)."""
    body = ModelCard(text).text
    span = card.find_section(body)
    assert span is not None
    return body[: span[0]], body[span[0] : span[1]], body[span[1] :]


def test_new_card_from_emulated_report(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, None)
    assert cli_card("emulated_report.json", folder) == 0
    text = (folder / "README.md").read_text(encoding="utf-8")
    data = ModelCard(text).data.to_dict()
    assert data["tags"] == ["neuron-emulated"]  # never `neuron`, never an instance family
    meta = data[card.METADATA_KEY]
    assert meta["target"] == "emulated" and "instance_family" not in meta
    assert meta["date"] == "2026-11-30"
    assert meta["graphs_compiled"] == 2
    assert meta["parity"] == "semantic: pass, precision: pass"
    _, section, _ = split(text)
    assert "| Silicon target | emulated: Dynamo/AOTAutograd/StableHLO only |" in section
    assert "not a device verification" in section
    assert "Trainium" not in section
    assert "# model" in text


def test_device_report_tags_instance_family(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, None)
    assert cli_card("device_report.json", folder) == 0
    text = (folder / "README.md").read_text(encoding="utf-8")
    data = ModelCard(text).data.to_dict()
    assert data["tags"] == ["neuron", "trn2"]
    meta = data[card.METADATA_KEY]
    assert (meta["instance_family"], meta["torch_neuronx"], meta["porter"]) == ("trn2", "2.13.3.0.15", "0.2.0")
    assert meta["cpu_fallback_ops"] == ["aten::linalg_qr"]
    _, section, _ = split(text)
    assert "AWS Trainium trn2" in section
    assert "| CPU fallbacks | 1 (aten::linalg_qr) |" in section
    assert "| Host syncs per step | 0.5 |" in section


def test_update_keeps_body_and_front_matter(tmp_path: Path) -> None:
    folder = folder_with(tmp_path)
    before = (DATA / "existing_README.md").read_text(encoding="utf-8")
    assert cli_card("device_report.json", folder) == 0
    after = (folder / "README.md").read_text(encoding="utf-8")

    old_head, old_section, old_tail = split(before)
    new_head, new_section, new_tail = split(after)
    assert new_head == old_head  # byte-for-byte, including the fenced "## Hardware compatibility"
    assert new_tail == old_tail
    assert "Old hand-written notes" in old_section and "Old hand-written notes" not in new_section
    assert "this is inside a code fence and must not be touched" in new_head

    old_data = ModelCard(before).data.to_dict()
    new_data = ModelCard(after).data.to_dict()
    assert {k: v for k, v in new_data.items() if k not in OURS} == {
        k: v for k, v in old_data.items() if k not in OURS
    }
    assert new_data["tags"] == ["text-generation", "gpt2", "neuron", "trn2"]


def test_idempotent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = folder_with(tmp_path)
    assert cli_card("device_report.json", folder) == 0
    first = (folder / "README.md").read_bytes()
    capsys.readouterr()
    assert cli_card("device_report.json", folder) == 0
    assert (folder / "README.md").read_bytes() == first
    assert capsys.readouterr().out.startswith("unchanged: ")
    result, _ = card.write_card(folder, card.read_report(DATA / "device_report.json"))
    assert not result.changed and not result.created


def test_crlf_card_keeps_its_line_endings(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, None)
    original = b"---\r\nlicense: mit\r\n---\r\n\r\n# crlf model\r\n\r\nSome text.\r\n"
    (folder / "README.md").write_bytes(original)
    assert cli_card("emulated_report.json", folder) == 0
    written = (folder / "README.md").read_bytes()
    assert written.count(b"\n") == written.count(b"\r\n")
    assert b"\r\n\r\n# crlf model\r\n\r\nSome text.\r\n\r\n## Hardware compatibility\r\n" in written
    assert cli_card("emulated_report.json", folder) == 0
    assert (folder / "README.md").read_bytes() == written


def test_switching_instance_family_replaces_its_tag(tmp_path: Path) -> None:
    folder = folder_with(tmp_path)
    assert cli_card("device_report.json", folder) == 0
    assert cli_card("device_trn3_report.json", folder) == 0
    data = ModelCard((folder / "README.md").read_text(encoding="utf-8")).data.to_dict()
    assert data["tags"] == ["text-generation", "gpt2", "neuron", "trn3"]
    meta = data[card.METADATA_KEY]
    # the alternative key spellings of that report were all read
    assert meta == {
        "target": "device", "instance_family": "trn3", "torch": "2.14.0", "torch_neuronx": "2.14.3.0.4",
        "porter": "0.3.0", "date": "2026-12-04", "graphs_compiled": 4, "recompiles_after_warmup": 1,
        "cpu_fallbacks": 0, "host_syncs_per_step": 2, "parity": "pass",
    }


def test_emulated_never_replaces_device_silently(tmp_path: Path, capsys) -> None:
    folder = folder_with(tmp_path)
    assert cli_card("device_report.json", folder) == 0
    device_card = (folder / "README.md").read_bytes()
    assert cli_card("emulated_report.json", folder) == 2
    assert "records a device verification" in capsys.readouterr().err
    assert (folder / "README.md").read_bytes() == device_card
    assert cli_card("emulated_report.json", folder, "--allow-downgrade") == 0
    data = ModelCard((folder / "README.md").read_text(encoding="utf-8")).data.to_dict()
    assert data["tags"] == ["text-generation", "gpt2", "neuron-emulated"]
    assert data[card.METADATA_KEY]["target"] == "emulated"


def test_emulated_then_device_upgrades(tmp_path: Path) -> None:
    folder = folder_with(tmp_path)
    assert cli_card("emulated_report.json", folder) == 0
    assert cli_card("device_report.json", folder) == 0
    data = ModelCard((folder / "README.md").read_text(encoding="utf-8")).data.to_dict()
    assert data["tags"] == ["text-generation", "gpt2", "neuron", "trn2"]


@pytest.mark.parametrize(
    ("report", "code", "message"),
    [
        ("failed_report.json", 1, "the check did not pass"),
        ("device_but_emulated_report.json", 2, "cannot be written up as a device verification"),
        ("device_no_instance_report.json", 2, "must name the instance family"),
        ("no_target_report.json", 2, "no usable target"),
    ],
)
def test_unusable_reports_write_nothing(tmp_path: Path, capsys, report: str, code: int, message: str) -> None:
    folder = folder_with(tmp_path)
    assert cli_card(report, folder) == code
    assert message in capsys.readouterr().err
    assert (folder / "README.md").read_bytes() == (DATA / "existing_README.md").read_bytes()


def test_unreadable_inputs(tmp_path: Path, capsys) -> None:
    folder = folder_with(tmp_path, None)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["card", str(bad), str(folder)]) == 2
    assert main(["card", str(tmp_path / "missing.json"), str(folder)]) == 2
    (folder / "README.md").write_text("---\n- a list\n---\n# x\n", encoding="utf-8")
    assert main(["card", str(DATA / "emulated_report.json"), str(folder)]) == 2
    assert "front matter" in capsys.readouterr().err


def test_date_defaults_to_report_mtime(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"target": "emulated", "exit_code": 0}), encoding="utf-8")
    os.utime(report, (1767225600, 1767225600))  # 2026-01-01T00:00:00Z
    verification = card.read_report(report)
    assert verification.date == "2026-01-01"
    assert verification.porter  # falls back to the running porter's version


def test_dry_run_and_json(tmp_path: Path, capsys) -> None:
    folder = folder_with(tmp_path)
    assert cli_card("device_report.json", folder, "--dry-run", "--json") == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["changed"] is True and payload["tags"][-2:] == ["neuron", "trn2"]
    assert "## Hardware compatibility" in payload["text"]
    assert (folder / "README.md").read_bytes() == (DATA / "existing_README.md").read_bytes()
    assert main(["card", "--help"]) == 0
    assert "Exit codes: 0 card written" in capsys.readouterr().out


def test_card_then_gate_round_trip(tmp_path: Path, capsys) -> None:
    folder = folder_with(tmp_path, None)
    assert main(["gate", str(folder), "--require", "neuron"]) == 1
    assert cli_card("device_report.json", folder) == 0
    assert main(["gate", str(folder), "--require", "neuron", "--instance", "trn2"]) == 0


def test_card_without_front_matter_keeps_its_body(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, None)
    body = "# bare\n\nNo front matter here.\n"
    (folder / "README.md").write_text(body, encoding="utf-8")
    assert cli_card("emulated_report.json", folder) == 0
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    assert ModelCard(text).text.startswith(body + "\n## Hardware compatibility\n")


def test_string_tags_are_kept_as_one_tag(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, None)
    (folder / "README.md").write_text("---\ntags: vision\n---\n\n# m\n", encoding="utf-8")
    assert cli_card("device_report.json", folder) == 0
    data = ModelCard((folder / "README.md").read_text(encoding="utf-8")).data.to_dict()
    assert data["tags"] == ["vision", "neuron", "trn2"]


def _check_report(target: str = "emulated", verdict: str = "match", fallback_ops=None) -> dict:
    """A report built with porter check's own dataclasses, as `porter check --json` writes it."""
    rep = pytest.importorskip("porter.check.report")
    graphs = tuple(
        rep.GraphInfo(
            graph_id=i, region="train_step at train.py:40", kind=kind, compile_id="0/0", step=0,
            nodes=12, input_shapes=((8, 16),), lowered=target == "emulated" or None,
            status=status,
        )
        for i, (kind, status) in enumerate(
            [("forward", "lowered"), ("backward", "unverified" if target == "emulated" else "not-run")]
        )
    )
    parity = rep.Parity(
        original="train_cuda.py",
        passes=(
            rep.ParityPass("semantic (fp32)", "EAGER_FP32", 1e-5, 0.0, (2.3, 2.1), (2.3, 2.1), 0.0, verdict),
        ),
    )
    report = rep.CheckReport(
        script="ported/train.py", target=target, target_description=rep.EMULATED_TARGET_NAME,
        steps_requested=2, steps_run=2, exit_code=0 if verdict == "match" else 1,
        verdict="pass" if verdict == "match" else "fail",
        stages=(rep.Stage("dynamo", True), rep.Stage("neuronx-cc", False, "not run")),
        findings=(rep.Finding("recompile", "error", "shape change", "train.py", 51, count=2),)
        if verdict != "match" else (),
        graphs=graphs, syncs_per_step={"train.py:58": 0.0, "train.py:60": 0.25},
        parity=parity, fallback_ops=fallback_ops,
    )
    return report.to_dict()


def test_card_from_check_report_dataclasses(tmp_path: Path, capsys) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps(_check_report()), encoding="utf-8")
    folder = folder_with(tmp_path)
    assert main(["card", str(report), str(folder)]) == 0
    first = (folder / "README.md").read_bytes()
    assert main(["card", str(report), str(folder)]) == 0
    assert (folder / "README.md").read_bytes() == first  # idempotent
    meta = ModelCard(first.decode()).data.to_dict()[card.METADATA_KEY]
    assert meta["target"] == "emulated"
    assert (meta["graphs_compiled"], meta["graphs_unverified"]) == (2, 1)
    assert meta["recompiles_after_warmup"] == 0
    assert meta["host_syncs_per_step"] == 0.25
    assert meta["parity"] == "semantic (fp32): match"
    assert "torch_neuronx" not in meta  # emulated: never the installed torch-neuronx
    assert "| Graphs not verified | 1 (known upstream torch-mlir gaps, not the script's) |" in first.decode()
    capsys.readouterr()
    assert main(["gate", str(folder), "--require", "neuron"]) == 0


def test_failed_check_report_dataclasses(tmp_path: Path, capsys) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps(_check_report(verdict="mismatch")), encoding="utf-8")
    folder = folder_with(tmp_path)
    assert main(["card", str(report), str(folder)]) == 1
    assert "the check did not pass" in capsys.readouterr().err


def test_device_check_report_needs_instance(tmp_path: Path, capsys) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps(_check_report("device", fallback_ops=["aten::nonzero"])), encoding="utf-8")
    folder = folder_with(tmp_path)
    assert main(["card", str(report), str(folder)]) == 2
    assert "--instance" in capsys.readouterr().err
    assert main(["card", str(report), str(folder), "--instance", "trn3"]) == 0
    data = ModelCard((folder / "README.md").read_text(encoding="utf-8")).data.to_dict()
    assert data["tags"][-2:] == ["neuron", "trn3"]
    assert data[card.METADATA_KEY]["cpu_fallback_ops"] == ["aten::nonzero"]
