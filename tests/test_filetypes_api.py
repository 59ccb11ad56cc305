"""The public API of ``porter.filetypes``: kinds, codes, documentation, failures, options."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from porter.engine.changes import Kind, Safety
from porter.engine.options import Options
from porter.engine.registry import all_rules
from porter.engine.results import Failure, Success, Unchanged
from porter.filetypes import FILE_CODES, explain, handles, kind_of, port_file

FIXTURES = Path(__file__).parent / "fixtures_files"


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("requirements.txt", "requirements"),
        ("requirements-dev.txt", "requirements"),
        ("dev-requirements.in", "requirements"),
        ("repo/requirements/base.txt", "requirements"),
        ("constraints.txt", "requirements"),
        ("pyproject.toml", "pyproject"),
        ("setup.cfg", "setup.cfg"),
        ("environment.yml", "conda"),
        ("environment-gpu.yaml", "conda"),
        ("scripts/train.sh", "shell"),
        ("Makefile", "make"),
        ("rules.mk", "make"),
        ("job.slurm", "slurm"),
        ("run.sbatch", "slurm"),
        ("Procfile", "procfile"),
        ("Dockerfile", "docker"),
        ("Dockerfile.gpu", "docker"),
        ("docker/train.dockerfile", "docker"),
        ("configs/accelerate.yaml", "yaml"),
        ("ds_config.json", "json"),
        ("config.toml", "toml"),
    ],
)
def test_kinds(path: str, kind: str) -> None:
    assert kind_of(path, b"") == kind
    assert handles(path)


@pytest.mark.parametrize(
    "path",
    ["train.py", "setup.py", "notes.txt", "package.json", ".github/workflows/ci.yml", ".pre-commit-config.yaml",
     "docker-compose.yml", "README.md", "model.ipynb"],
)
def test_not_handled(path: str) -> None:
    assert not handles(path)


def test_setup_py_is_ported_only_when_called(tmp_path: Path) -> None:
    assert kind_of("setup.py") == "setup.py" and not handles("setup.py")
    result = port_file("setup.py", b'from setuptools import setup\nsetup(install_requires=["torch==2.14.0+cu121"])\n')
    assert isinstance(result, Success)
    assert b'"torch==2.14.0", "torch-neuronx==2.14.*"' in result.new


def test_extensionless_shell_script_by_shebang(tmp_path: Path) -> None:
    script = tmp_path / "launch"
    script.write_bytes(b"#!/usr/bin/env bash\npython -m torch.distributed.launch --nproc_per_node=8 t.py\n")
    assert handles(str(script))
    assert kind_of(str(tmp_path / "data")) is None


def test_codes_are_in_the_file_ranges_and_documented() -> None:
    python_codes = {code for rule in all_rules() for code in rule.all_codes()}
    for code, summary in FILE_CODES.items():
        number = int(code[3:])
        assert any(low <= number <= low + 9 for low in (190, 290, 390, 990)), code
        assert code not in python_codes, f"{code} clashes with a Python rule"
        assert summary and "\n" not in summary
        text = explain(code)
        assert text is not None and text.startswith(f"{code} — ")
        positions = [text.index(f"\n{title}:\n") for title in ("What it does", "Why", "Before", "After", "Safety")]
        assert positions == sorted(positions), code
    assert explain("nrn990") == explain("NRN990")
    assert explain("NRN101") is None


def test_every_emitted_code_is_listed() -> None:
    emitted = {line.split()[1] for f in FIXTURES.glob("*/*.findings") for line in f.read_text().splitlines()}
    assert emitted <= set(FILE_CODES)
    assert set(FILE_CODES) <= emitted, f"codes without a fixture: {sorted(set(FILE_CODES) - emitted)}"


@pytest.mark.parametrize(
    ("path", "data", "kind"),
    [
        ("config.json", b'{"device": "cuda",}', "parse"),
        ("config.yaml", b"device: cuda\n  bad: [", "parse"),
        ("config.toml", b'device = "cuda"\ndevice = "cpu"\n', "parse"),
        ("requirements.txt", b"torch\x00==2", "read"),
        ("requirements.txt", b"torch==2.3.1+cu121 \xff\n", "read"),
    ],
)
def test_bad_files_are_failures_not_exceptions(path: str, data: bytes, kind: str) -> None:
    result = port_file(path, data)
    assert isinstance(result, Failure) and result.kind == kind, result
    assert "\n" not in result.reason


def test_unknown_kind_and_prefilter() -> None:
    assert isinstance(port_file("notes.txt", b"torch==2.3.1+cu121\n"), Unchanged)
    result = port_file("requirements.txt", b"numpy\nrequests\n")
    assert isinstance(result, Unchanged) and result.skipped == "prefilter"


def test_too_large_is_refused() -> None:
    result = port_file("requirements.txt", b"torch==2.3.1+cu121\n" * 10, Options(max_file_size=20))
    assert isinstance(result, Failure) and result.kind == "read"


def test_select_and_ignore_filter_every_change() -> None:
    data = (FIXTURES / "requirements" / "basic.in.txt").read_bytes()
    everything = port_file("requirements.txt", data)
    assert isinstance(everything, Success)
    assert {c.code for c in everything.changes} > {"NRN990", "NRN994"}
    only = port_file("requirements.txt", data, Options(select=("NRN993",)))
    assert isinstance(only, Success) and {c.code for c in only.changes} == {"NRN993"}
    assert b"whl/cpu" in only.new and b"torch==2.3.1+cu121" in only.new  # the pins were left alone
    ignored = port_file("requirements.txt", data, Options(ignore=("NRN99",)))
    assert isinstance(ignored, Unchanged)
    nothing = port_file("requirements.txt", data, Options(select=("NRN1",)))
    assert isinstance(nothing, Unchanged)


def test_changes_carry_line_safety_and_kind() -> None:
    result = port_file("run.sh", b"export NCCL_DEBUG=INFO\npython -m torch.distributed.launch t.py\n")
    assert isinstance(result, Success)
    by_code = {c.code: c for c in result.changes}
    assert by_code["NRN392"].line == 1 and by_code["NRN392"].kind is Kind.MARKER
    assert by_code["NRN390"].line == 2 and by_code["NRN390"].safety is Safety.REVIEW
    assert result.new_text.splitlines()[0] == "# porter: NRN392 NCCL_DEBUG: " + by_code["NRN392"].message.split(": ", 1)[1]


def test_json_findings_are_reported_not_written() -> None:
    data = b'{"amp": {"enabled": true}}\n'
    result = port_file("ds_config.json", data)
    assert isinstance(result, Success) and result.new == data
    assert [(c.code, c.kind) for c in result.changes] == [("NRN293", Kind.MARKER)]


def _outputs(kind: str) -> list[Path]:
    return sorted(p for p in (FIXTURES / kind).glob("*.out.*"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
@pytest.mark.parametrize("path", _outputs("shell") + _outputs("slurm"), ids=lambda p: p.name)
def test_ported_scripts_are_valid_bash(path: Path) -> None:
    check = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
@pytest.mark.parametrize("path", _outputs("make"), ids=lambda p: p.name)
def test_ported_makefiles_parse(path: Path) -> None:
    check = subprocess.run(["make", "-n", "-p", "-f", str(path)], capture_output=True, text=True, cwd=path.parent)
    assert check.returncode == 0, check.stderr
    assert re.search(r"torchrun", check.stdout), "the recipe lost its command"


def _inputs() -> list[Path]:
    return sorted(FIXTURES.glob("*/*.in.*"))


def _virtual(path: Path) -> str:
    from tests.test_filetypes import Case

    return Case(path).virtual_path


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_truncated_inputs_never_raise_and_stay_idempotent(path: Path) -> None:
    """Every prefix cut at a line or mid-line: a result (never an exception), and a stable port."""
    data = path.read_bytes()
    name = _virtual(path)
    cuts = sorted({*range(0, len(data), max(1, len(data) // 12)), len(data) - 1})
    for cut in cuts:
        result = port_file(name, data[:cut])
        assert isinstance(result, (Success, Unchanged, Failure))
        if isinstance(result, Success):
            again = port_file(name, result.new)
            assert not isinstance(again, Failure), (cut, again)
            assert not isinstance(again, Success) or again.new == result.new, cut


def test_crlf_files_keep_crlf() -> None:
    for path in FIXTURES.glob("*/*crlf*.out.*"):
        data = path.read_bytes()
        assert b"\r\n" in data and re.search(rb"(?<!\r)\n", data) is None, path.name


def test_migrate_file_reads_from_disk(tmp_path: Path) -> None:
    from porter.filetypes import migrate_file

    target = tmp_path / "requirements.txt"
    target.write_bytes(b"torch==2.14.0+cu121\n")
    result = migrate_file(str(target), display_path="requirements.txt")
    assert isinstance(result, Success) and result.path == "requirements.txt"
    assert result.new.startswith(b"torch==2.14.0\n")
    link = tmp_path / "requirements-link.txt"
    link.symlink_to(target)
    refused = migrate_file(str(link))
    assert isinstance(refused, Failure) and refused.kind == "read"
    missing = migrate_file(str(tmp_path / "requirements-none.txt"))
    assert isinstance(missing, Failure) and missing.kind == "read"


def test_chain_setup_py_merges_with_the_python_port() -> None:
    from porter.engine.core import port_source
    from porter.filetypes import chain_setup_py

    data = (
        b"import torch\nfrom setuptools import setup\n\n"
        b"torch.backends.cudnn.benchmark = True\n"
        b'setup(name="x", install_requires=["torch==2.14.0+cu121"])\n'
    )
    python = port_source(data, "setup.py")
    assert isinstance(python, Success)
    merged = chain_setup_py("setup.py", data, python)
    assert isinstance(merged, Success) and merged.old == data
    codes = [c.code for c in merged.changes]
    assert "NRN990" in codes and "NRN992" in codes and len(codes) > 2
    assert b"cudnn" not in merged.new and b'"torch==2.14.0", "torch-neuronx==2.14.*"' in merged.new
    plain = b'from setuptools import setup\nsetup(install_requires=["numpy"])\n'
    unchanged = port_source(plain, "setup.py")
    assert chain_setup_py("setup.py", plain, unchanged) is unchanged
