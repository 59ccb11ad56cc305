"""porter gate: local cards, and Hub ids served by a real HTTP server on 127.0.0.1 (no network)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from porter.audit import card, gate
from porter.cli import main

DATA = Path(__file__).parent / "data" / "cards"
SHA = "0123456789abcdef0123456789abcdef01234567"


def carded(tmp_path: Path, *reports: str, name: str = "model") -> Path:
    """A model folder whose card went through ``porter card`` with each report in turn."""
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(DATA / "existing_README.md", folder / "README.md")
    for report in reports:
        card.write_card(folder, card.read_report(DATA / report))
    return folder


def run_gate(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main(["gate", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


# --------------------------------------------------------------------------------------------------
# Local folders


def test_uncarded_model_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    shutil.copy(DATA / "existing_README.md", folder / "README.md")  # hand-written section, no tag
    assert main(["gate", str(folder), "--require", "neuron"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL ")
    assert "no `neuron` or `neuron-emulated` tag" in out
    assert "porter card report.json" in out


def test_folder_without_readme_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_gate([str(tmp_path), "--require", "neuron"], capsys)
    assert code == 1
    assert data["reasons"] == ["there is no model card (README.md)"]


def test_emulated_card_passes_plain_requirement_only(tmp_path: Path, capsys) -> None:
    folder = carded(tmp_path, "emulated_report.json")
    code, data = run_gate([str(folder), "--require", "neuron"], capsys)
    assert (code, data["kind"], data["verified"]) == (0, "emulated", True)
    code, data = run_gate([str(folder), "--require", "neuron", "--require-device"], capsys)
    assert code == 1
    assert any("only an emulated verification" in r for r in data["reasons"])
    code, data = run_gate([str(folder), "--require", "neuron", "--instance", "trn2"], capsys)
    assert code == 1  # --instance implies a device run


def test_device_card_and_instance_family(tmp_path: Path, capsys) -> None:
    folder = carded(tmp_path, "device_report.json")
    cases = ([], 0), (["--require-device"], 0), (["--instance", "trn2"], 0), (["--instance", "trn3"], 1)
    for extra, expected in cases:
        code, data = run_gate([str(folder), "--require", "neuron", *extra], capsys)
        assert code == expected, (extra, data)
    assert data["reasons"][0] == "verified on trn2, not trn3"
    assert "NOT verified for neuron on device trn3" in data["message"]


def test_tag_without_section_fails(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "README.md").write_text("---\ntags:\n- neuron\n- trn2\n---\n\n# m\n", encoding="utf-8")
    code, data = run_gate([str(folder), "--require", "neuron"], capsys)
    assert code == 1
    assert "no 'Hardware compatibility' section" in data["reasons"][0]


def test_hand_written_card_read_from_tags(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "README.md").write_text(
        "---\ntags:\n- neuron\n- trn3\n---\n\n# m\n\n## Hardware compatibility\n\nRan on trn3.\n",
        encoding="utf-8",
    )
    code, data = run_gate([str(folder), "--require", "neuron", "--instance", "trn3"], capsys)
    assert (code, data["kind"], data["instance_family"]) == (0, "device", "trn3")


def test_neuron_tag_on_emulated_verification_is_refused(tmp_path: Path, capsys) -> None:
    """Someone adds `neuron` by hand to an emulated card: still not a device verification."""
    folder = carded(tmp_path, "emulated_report.json")
    readme = folder / "README.md"
    readme.write_text(readme.read_text().replace("- neuron-emulated\n", "- neuron-emulated\n- neuron\n"))
    code, data = run_gate([str(folder), "--require", "neuron"], capsys)
    assert code == 1
    assert any("an emulated run is not a device verification" in r for r in data["reasons"])


def test_errors_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["gate", str(tmp_path / "missing"), "--require", "neuron"]) == 2
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "README.md").write_text("---\ntags: [unclosed\n---\n# x\n", encoding="utf-8")
    assert main(["gate", str(bad), "--require", "neuron"]) == 2
    assert "unreadable model card" in capsys.readouterr().err
    assert main(["gate", str(bad), "--require", "cuda"]) == 2  # bad usage
    assert main(["gate", "--help"]) == 0
    assert "Exit codes: 0 verified" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------------
# Hub ids, through huggingface_hub against a local server


class FakeHub(ThreadingHTTPServer):
    """Serves ``/api/models/<id>[/revision/<rev>]`` and ``/<id>/resolve/<rev>/README.md``."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.models: dict[str, tuple[list[str], str | None]] = {}
        self.requests: list[str] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeHub

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def _send(self, code: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _not_found(self) -> None:
        body = json.dumps({"error": "Repository not found"}).encode()
        self._send(404, body, "application/json", {"X-Error-Code": "RepoNotFound"})

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = unquote(urlparse(self.path).path)
        self.server.requests.append(path)
        if path.startswith("/api/models/"):
            repo_id = path[len("/api/models/"):].split("/revision/")[0]
            if repo_id not in self.server.models:
                return self._not_found()
            tags, readme = self.server.models[repo_id]
            info = {"id": repo_id, "modelId": repo_id, "sha": SHA, "private": False, "tags": tags,
                    "siblings": [{"rfilename": "README.md"}] if readme is not None else []}
            return self._send(200, json.dumps(info).encode(), "application/json")
        for repo_id, (_, readme) in self.server.models.items():
            if path == f"/{repo_id}/resolve/{SHA}/README.md":
                if readme is None:
                    body = json.dumps({"error": "Entry not found"}).encode()
                    return self._send(404, body, "application/json", {"X-Error-Code": "EntryNotFound"})
                return self._send(200, readme.encode("utf-8"), "text/markdown; charset=utf-8")
        return self._not_found()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # read once at import time
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HF_TOKEN", "")
    server = FakeHub()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _hub_tags(readme: str) -> list[str]:
    """What the Hub reports as tags: the card's own plus its computed ones."""
    return [*card.card_tags(readme), "pytorch", "region:us"]


def test_hub_device_model_passes(tmp_path: Path, hub: FakeHub, capsys) -> None:
    readme = (carded(tmp_path, "device_report.json") / "README.md").read_text(encoding="utf-8")
    hub.models["acme/tiny-gpt"] = (_hub_tags(readme), readme)
    code, data = run_gate(
        ["acme/tiny-gpt", "--require", "neuron", "--instance", "trn2", "--endpoint", hub.endpoint], capsys
    )
    assert code == 0, data
    assert (data["source"], data["kind"], data["instance_family"]) == ("hub", "device", "trn2")
    assert "/api/models/acme/tiny-gpt" in hub.requests
    assert f"/acme/tiny-gpt/resolve/{SHA}/README.md" in hub.requests


def test_hub_endpoint_from_environment(tmp_path: Path, hub: FakeHub, monkeypatch, capsys) -> None:
    readme = (carded(tmp_path, "emulated_report.json") / "README.md").read_text(encoding="utf-8")
    hub.models["acme/emu"] = (_hub_tags(readme), readme)
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    result = gate.gate("acme/emu", gate.Requirement("neuron"))
    assert (result.exit_code, result.kind) == (0, "emulated")
    result = gate.gate("acme/emu", gate.Requirement("neuron", device=True))
    assert result.exit_code == 1
    assert "only an emulated verification" in result.message


def test_hub_uncarded_and_missing(hub: FakeHub, capsys) -> None:
    hub.models["acme/plain"] = (["pytorch", "region:us"], "---\nlicense: mit\n---\n\n# plain\n")
    hub.models["acme/nocard"] = (["pytorch"], None)
    code, data = run_gate(["acme/plain", "--require", "neuron", "--endpoint", hub.endpoint], capsys)
    assert code == 1
    assert "no `neuron` or `neuron-emulated` tag" in data["reasons"][0]
    code, data = run_gate(["acme/nocard", "--require", "neuron", "--endpoint", hub.endpoint], capsys)
    assert code == 1
    assert data["reasons"] == ["there is no model card (README.md)"]
    code, data = run_gate(["acme/ghost", "--require", "neuron", "--endpoint", hub.endpoint], capsys)
    assert code == 2
    assert "model not found" in data["error"]


def test_hub_tags_come_from_model_info(tmp_path: Path, hub: FakeHub) -> None:
    """The Hub's tag list decides: a card whose tag the Hub does not list is not verified."""
    readme = (carded(tmp_path, "device_report.json") / "README.md").read_text(encoding="utf-8")
    hub.models["acme/stale"] = (["pytorch"], readme)
    result = gate.gate_hub("acme/stale", gate.Requirement("neuron"), endpoint=hub.endpoint)
    assert result.exit_code == 1
    assert "the `neuron` tag is missing" in result.reasons[0]


def test_hub_unreachable_is_an_error() -> None:
    with pytest.raises(gate.GateError, match="cannot reach"):
        gate.gate_hub("acme/x", gate.Requirement("neuron"), endpoint="http://127.0.0.1:9", timeout=5)


def test_local_vs_hub_detection(tmp_path: Path) -> None:
    assert gate.is_local(str(tmp_path))
    assert gate.is_local("./relative/missing")
    assert not gate.is_local("acme/tiny-gpt")
    assert not gate.is_local("gpt2")
