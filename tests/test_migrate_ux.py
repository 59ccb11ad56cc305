"""``porter migrate`` as a user meets it: whole repositories by default, ``--safe-only``,
``--interactive``, the ``--write`` summary, output formats on standard output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from porter.cli import main

CUDA = 'import torch\nx = torch.zeros(1, device="cuda").cuda()\ny = torch.ones(1).cuda()\n'
PINS = "torch==2.1.0+cu121\n"
LAUNCHER = "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,1 python train.py\n"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def _repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.py").write_text(CUDA)
    (root / "requirements.txt").write_text(PINS)
    (root / "run.sh").write_text(LAUNCHER)
    return root


def test_a_folder_is_ported_whole_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path / "r")
    assert main(["migrate", "--write", "-q", "--no-progress", str(repo)]) == 0
    assert "cu121" not in (repo / "requirements.txt").read_text()
    assert (repo / "run.sh").read_text() != LAUNCHER
    assert '.to("neuron")' in (repo / "train.py").read_text()
    assert "3 files ported" in capsys.readouterr().err


def test_python_only_opts_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path / "r")
    assert main(["migrate", "--write", "-q", "--no-progress", "--python-only", str(repo)]) == 0
    assert (repo / "requirements.txt").read_text() == PINS and (repo / "run.sh").read_text() == LAUNCHER
    assert "1 file ported" in capsys.readouterr().err
    assert main(["migrate", "--files", "--python-only", str(repo)]) == 2


def test_a_python_path_stays_python_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path / "r")
    assert main(["migrate", "--write", "-q", "--no-progress", str(repo / "train.py")]) == 0
    assert (repo / "requirements.txt").read_text() == PINS and (repo / "run.sh").read_text() == LAUNCHER
    assert "1 file ported" in capsys.readouterr().err


def test_discovering_non_python_files_imports_nothing_heavy(tmp_path: Path) -> None:
    """A fully cached run must not load libcst: deciding which files to port must not either."""
    repo = _repo(tmp_path / "r")
    code = (
        "import sys\nfrom porter.run.migrate import MigrateOptions, Migration\n"
        f"m = Migration(MigrateOptions(paths=({str(repo)!r},)))\n"
        "print(sorted(t.relative for t, _ in m._targets()))\n"
        "print([name for name in ('libcst', 'torch', 'yaml') if name in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["['requirements.txt', 'run.sh', 'train.py']", "[]"]


MIXED = (
    "import torch\n\n"
    "x = torch.ones(1).cuda()\n"
    "if x.numel():\n"
    "    torch.cuda.memory._record_memory_history()\n"
    'y = torch.zeros(2, device="cuda")\n'
)


def test_safe_only_applies_the_safe_changes_and_lists_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "t.py"
    script.write_text(MIXED)
    assert main(["migrate", "--write", "--safe-only", "--no-progress", str(script)]) == 0
    text = script.read_text()
    assert '.to("neuron")' in text and 'device="neuron"' in text and "# porter: NRN104" not in text
    captured = capsys.readouterr()
    assert "NRN104 torch.cuda.memory has no known Neuron equivalent; port by hand [review] (not applied)" in captured.out
    assert "1 file ported (2 changes, 0 to review)" in captured.err and "1 change not applied" in captured.err
    # what is left is exactly what a full run still makes: the review marker
    assert main(["migrate", "--write", "--no-progress", str(script)]) == 0
    assert "# porter: NRN104" in script.read_text() and "NRN104" in capsys.readouterr().out


def test_safe_only_reports_what_was_left_and_verifies_what_was_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    source = 'import torch\n\nx = torch.ones(1).cuda()\ntorch.cuda.memory._record_memory_history()\ny = torch.zeros(2, device="cuda")\n'
    script = tmp_path / "t.py"
    script.write_text(source)
    report = tmp_path / "r.json"
    assert main(["migrate", "--write", "--safe-only", "--no-progress", "--report", str(report), str(script)]) == 0
    data = json.loads(report.read_text())
    assert [(c["code"], c["line"]) for c in data["not_applied"]] == [("NRN104", 4)] and data["totals"]["not_applied"] == 1
    assert sorted(c["code"] for c in data["changes"]) == ["NRN101", "NRN102"]
    # The verifier read the file as written: the CUDA-only call the skipped marker was for is unmarked in it.
    (record,) = data["files"]
    assert [(f["kind"], f["line"]) for f in record["verifier"]] == [("cuda-only", 4)]
    assert "1 CUDA-only left unmarked" in capsys.readouterr().err
    markdown = tmp_path / "r.md"
    script.write_text(source)
    assert main(["migrate", "--write", "--safe-only", "--no-progress", "--report", str(markdown), str(script)]) == 0
    assert "## Not applied\n\n- [ ] `t.py:4` NRN104 [review]" in markdown.read_text()
    # The whole port marks it: no finding.
    script.write_text(source)
    assert main(["migrate", "--write", "--no-progress", "--report", str(report), str(script)]) == 0
    data = json.loads(report.read_text())
    assert data["not_applied"] == [] and data["files"][0]["verifier"] == []


def test_safe_only_leaves_a_file_whose_safe_changes_need_a_review_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = Path(__file__).parent / "fixtures" / "_hostsync" / "running_mean.in.py"
    script = tmp_path / "t.py"
    script.write_bytes(source.read_bytes())
    assert main(["migrate", "--write", "--safe-only", "--no-progress", str(script)]) == 0
    assert script.read_bytes() == source.read_bytes()
    assert f"{script}: left as it was: the changes kept depend on changes skipped" in capsys.readouterr().err


def test_interactive_asks_per_hunk(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import porter.commands.migrate as command

    script = tmp_path / "t.py"
    script.write_text(MIXED)
    monkeypatch.setattr(command, "_stdin_is_terminal", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO("a\ns\na\n"))  # accept .cuda(), skip the marker, accept "cuda"
    assert main(["migrate", "--interactive", str(script)]) == 0
    text = script.read_text()
    assert '.to("neuron")' in text and 'device="neuron"' in text and "# porter: NRN104" not in text
    out = capsys.readouterr().out
    assert f"{script} hunk 2/3: NRN104 [review]" in out and "+    # porter: NRN104" in out
    script.write_text(MIXED)
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert main(["migrate", "--interactive", str(script)]) == 0
    assert script.read_text() == MIXED


def test_interactive_refuses_without_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "t.py"
    script.write_text(MIXED)
    assert main(["migrate", "--interactive", str(script)]) == 2  # pytest's stdin is not a terminal
    assert "standard input is not one" in capsys.readouterr().err
    assert script.read_text() == MIXED


def test_write_prints_a_summary_and_diff_prints_the_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "train.py").write_text(MIXED)
    monkeypatch.chdir(tmp_path)
    assert main(["migrate", "--no-progress", "--python-only", "."]) == 0
    out = capsys.readouterr().out
    assert "--- a/sub/train.py" in out and "sub/train.py:3 NRN102" in out and "./sub" not in out
    assert main(["migrate", "--write", "--no-progress", "."]) == 0
    out = capsys.readouterr().out
    assert "--- a/" not in out and "./sub" not in out
    assert "sub/train.py: 3 changes, 1 to review" in out
    assert "Changes by code:" in out and "NRN102" in out.split("Changes by code:")[1]
    assert "To review:\nsub/train.py:5 NRN104" in out
    (tmp_path / "sub" / "train.py").write_text(MIXED)
    assert main(["migrate", "--write", "--diff", "--no-progress", "."]) == 0
    assert "--- a/sub/train.py" in capsys.readouterr().out


def test_output_formats_on_standard_output(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    (tmp_path / "train.py").write_text(MIXED)
    monkeypatch.chdir(tmp_path)
    assert main(["migrate", "--output-format", "github", "--no-progress", "train.py"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert '::warning file=train.py,line=3::NRN102 .cuda() -> .to("neuron")' in lines
    assert any(line.startswith("::warning file=train.py,line=5::NRN104") and line.endswith("[review]") for line in lines)
    assert main(["migrate", "--output-format", "json", "--no-progress", "train.py"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert [change["code"] for change in record["changes"]] == ["NRN102", "NRN104", "NRN101"]
    assert main(["migrate", "--report", "-", "--no-progress", "train.py"]) == 0
    assert json.loads(capsys.readouterr().out)["changes"]
    assert main(["migrate", "--output-format", "sarif", "--no-progress", "train.py"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == "2.1.0"
    assert main(["migrate", "--output-format", "markdown", "--no-progress", "train.py"]) == 0
    assert "NRN104" in capsys.readouterr().out


def test_verbose_names_unchanged_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    assert main(["migrate", "-v", "--no-progress", str(tmp_path)]) == 0
    assert f"{tmp_path / 'a.py'}: unchanged (prefilter)" in capsys.readouterr().out
    assert main(["migrate", "--no-progress", str(tmp_path)]) == 0
    assert "unchanged (" not in capsys.readouterr().out


def test_github_commands_are_escaped() -> None:
    from porter.commands.migrate import github_command

    assert github_command("warning", "a,b:c.py", 3, "50% done\nnext") == "::warning file=a%2Cb%3Ac.py,line=3::50%25 done%0Anext"


def test_progress_advances_per_file_with_rate_eta_and_current_file() -> None:
    from porter.engine.results import Unchanged
    from porter.reports.progress import Progress

    progress = Progress.create(True, False)
    progress.start(3)
    progress.advance(Unchanged("a.py"), "sub/a.py")
    task = progress.bar.tasks[0]  # type: ignore[attr-defined]
    assert task.completed == 1 and task.fields["current"] == "sub/a.py" and task.fields["rate"] != "-"
    progress.advance(Unchanged("b.py"), "x" * 60)
    assert progress.bar.tasks[0].fields["current"] == "..." + "x" * 37  # type: ignore[attr-defined]
    columns = " ".join(type(column).__name__ for column in progress.bar.columns)  # type: ignore[attr-defined]
    assert "TimeRemainingColumn" in columns
    progress.stop()


def test_a_pool_batch_streams_results_one_file_at_a_time(tmp_path: Path) -> None:
    from porter.run.batch import Stats, _pool

    pool = _pool(600, 2, Stats())
    assert pool is not None
    try:
        assert pool.chunk == 1
    finally:
        pool.pool.terminate()


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_reports_name_a_repository_by_its_remote_or_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    repo = _repo(tmp_path / "proj")
    _git(repo, "init", "-q")
    _git(repo, "remote", "add", "origin", "https://user:secret@github.com/org/proj.git")
    json_path, sarif_path, md_path = tmp_path / "r.json", tmp_path / "r.sarif", tmp_path / "r.md"
    assert main(["migrate", "-q", "--no-progress", "--report", str(json_path), "--report", str(sarif_path), "--report", str(md_path), str(repo)]) == 0
    data, sarif = json.loads(json_path.read_text()), json.loads(sarif_path.read_text())
    del data["command"], sarif["runs"][0]["invocations"][0]["commandLine"]  # the command line as typed
    for text in (json.dumps(data), json.dumps(sarif), md_path.read_text()):
        assert str(tmp_path) not in text and "secret" not in text and "github.com/org/proj" in text
    assert json.loads(json_path.read_text())["repos"][0]["root"] == "https://github.com/org/proj.git"
    other = _repo(tmp_path / "plain")
    assert main(["migrate", "-q", "--no-progress", "--report", str(json_path), str(other)]) == 0
    assert json.loads(json_path.read_text())["repos"][0]["root"] == "plain"
    capsys.readouterr()


def test_sarif_rules_have_a_help_uri_to_their_doc_and_stay_compact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from porter.reports.sarif import INFORMATION_URI, _rules

    root = Path(__file__).parent.parent
    for rule in _rules():
        uri = str(rule.get("helpUri", ""))
        assert uri.startswith(f"{INFORMATION_URI}/blob/main/"), rule["id"]
        assert (root / uri.removeprefix(f"{INFORMATION_URI}/blob/main/")).is_file(), uri
    script = tmp_path / "t.py"
    script.write_text(MIXED)
    sarif = tmp_path / "r.sarif"
    assert main(["migrate", "-q", "--no-progress", "--report", str(sarif), str(script)]) == 0
    data = json.loads(sarif.read_text())
    assert [rule["id"] for rule in data["runs"][0]["tool"]["driver"]["rules"]] == ["NRN101", "NRN102", "NRN104"]
    assert sarif.read_text().count("What it does") == 3 and len(sarif.read_text().splitlines()) == 1
    capsys.readouterr()


def test_git_branch_commit_subject_is_short_with_details_in_the_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path / "proj")
    (repo / "more.py").write_text(MIXED)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    import os

    os.environ.update(env)
    try:
        assert main(["migrate", "-q", "--no-progress", "--git-branch", "port", str(repo)]) == 0
    finally:
        for key in env:
            os.environ.pop(key)
    message = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%B"], capture_output=True, text=True, check=True).stdout
    subject, blank, *body = message.splitlines()
    assert len(subject) <= 72 and subject.startswith("Port 4 files to AWS Trainium") and blank == ""
    assert any(line.startswith("- NRN104 x1") for line in body)
    capsys.readouterr()


def test_gate_on_a_missing_folder_says_so_and_requires_neuron_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["gate", "models/bert"]) == 2  # no --require: neuron; no Hub look-up
    err = capsys.readouterr().err
    assert "model not found: models/bert does not exist" in err
    (tmp_path / "models" / "bert").mkdir()
    (tmp_path / "models" / "bert" / "README.md").write_text("# bert\n")
    assert main(["gate", "models/bert"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_card_given_a_migrate_report_says_it_needs_a_check_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "t.py"
    script.write_text(MIXED)
    report = tmp_path / "migrate.json"
    assert main(["migrate", "-q", "--no-progress", "--report", str(report), str(script)]) == 0
    (tmp_path / "model").mkdir()
    capsys.readouterr()
    assert main(["card", str(report), str(tmp_path / "model")]) == 2
    assert "this is a `porter migrate --report` JSON; `porter card` needs the report of `porter check --json`" in capsys.readouterr().err


def test_safe_only_keeps_an_import_a_skipped_change_still_uses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "t.py"
    script.write_text("import torch\nfrom torch.cuda.amp import GradScaler\n\nx = torch.ones(1).cuda()\nscaler = GradScaler()\n")
    assert main(["migrate", "--write", "--safe-only", "--no-progress", str(script)]) == 0
    # NRN204 (review) removes the scaler and, with it, the import: skipped, so the import stays
    assert script.read_text() == 'import torch\nfrom torch.cuda.amp import GradScaler\n\nx = torch.ones(1).to("neuron")\nscaler = GradScaler()\n'
    assert "NRN204" in capsys.readouterr().out


def test_help_documents_every_new_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--safe-only", "--interactive", "--python-only", "--output-format", "--verbose", "--diff / --no-diff"):
        assert flag in text, flag
    assert "--files" not in text  # kept for old command lines, no longer documented


def test_safe_only_never_writes_a_partial_port_that_does_not_parse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = Path(__file__).parent / "fixtures" / "_mixed-precision" / "half_tensors.in.py"
    script = tmp_path / "t.py"
    script.write_bytes(source.read_bytes())
    assert main(["migrate", "--write", "--safe-only", "--no-progress", str(script)]) == 0
    assert script.read_bytes() == source.read_bytes()
    assert f"{script}: left as it was: the changes kept do not parse without the others" in capsys.readouterr().err
