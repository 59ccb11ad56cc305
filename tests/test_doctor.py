"""porter doctor: every listed conflict, on real (fake-content) distributions read by importlib.metadata."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from porter.audit import doctor
from porter.cli import main


def make_dist(site: Path, name: str, version: str, requires: list[str] = ()) -> None:
    """A ``<name>-<version>.dist-info/METADATA`` folder: a real distribution to importlib.metadata."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")


def make_torch(site: Path, version: str, cuda: str | None = None, version_py: bool = True, **kw) -> None:
    make_dist(site, "torch", version, **kw)
    if version_py:
        (site / "torch").mkdir()
        cuda_value = repr(cuda) if cuda else "None"
        (site / "torch" / "version.py").write_text(
            "from typing import Optional\n"
            f"__version__ = '{version}'\n"
            f"cuda: Optional[str] = {cuda_value}\n"
            "hip: Optional[str] = None\n",
            encoding="utf-8",
        )


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site-packages"
    path.mkdir()
    return path


@pytest.fixture
def devdir(tmp_path: Path) -> Path:
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "neuron0").touch()
    (dev / "null").touch()
    return dev


def run(site: Path, dev: Path, environ: dict[str, str] | None = None, python: str = "3.12.4"):
    env = doctor.collect([str(site)], environ=environ or {}, dev_dir=dev, python_version=python)
    report = doctor.diagnose(env)
    return report, {f.check: f for f in report.findings}


def test_healthy_native_environment_passes(site: Path, devdir: Path) -> None:
    make_torch(site, "2.13.0+cpu")
    make_dist(site, "torch-neuronx", "2.13.3.0.1")
    report, by = run(site, devdir)
    assert report.exit_code == 0, [f.to_dict() for f in report.errors]
    assert all(f.status == "ok" for f in report.findings), [f.to_dict() for f in report.findings]
    assert by["device"].summary.endswith(str(devdir / "neuron0"))
    assert "null" not in by["device"].summary
    json.dumps(report.to_dict())  # JSON-serialisable


@pytest.mark.parametrize(
    ("neuronx", "torch", "wanted"),
    [("2.14.3.0.7", "2.13.0+cpu", "2.14.0"), ("2.13.3.0.1", "2.14.0+cpu", "2.13.0")],
)
def test_version_pairing_mismatch(site: Path, devdir: Path, neuronx: str, torch: str, wanted: str) -> None:
    make_torch(site, torch)
    make_dist(site, "torch-neuronx", neuronx)
    report, by = run(site, devdir)
    assert report.exit_code == 1
    assert by["pairing"].status == "error"
    assert f"torch=={wanted}" in by["pairing"].summary
    assert f'"torch=={wanted}"' in by["pairing"].fix
    assert doctor.NEURON_INDEX in by["pairing"].fix


def test_legacy_xla_family(site: Path, devdir: Path) -> None:
    make_torch(site, "2.9.0+cpu")
    make_dist(site, "torch-neuronx", "2.9.0.2.10.16998")
    make_dist(site, "torch-xla", "2.9.0")
    report, by = run(site, devdir)
    assert report.exit_code == 1
    assert by["torch-neuronx"].status == "error"
    assert "legacy XLA" in by["torch-neuronx"].summary
    assert "uninstall -y torch-neuronx torch-xla" in by["torch-neuronx"].fix
    assert '"torch-neuronx==2.14.*"' in by["torch-neuronx"].fix
    # torch-xla beside a legacy install is part of that stack: a warning, not a second error
    assert by["torch-xla"].status == "warning"


def test_torch_xla_beside_native(site: Path, devdir: Path) -> None:
    make_torch(site, "2.14.0+cpu")
    make_dist(site, "torch-neuronx", "2.14.3.0.2")
    make_dist(site, "torch-xla", "2.9.0")
    make_dist(site, "libneuronxla", "2.2.1")
    report, by = run(site, devdir)
    assert report.exit_code == 1
    assert by["torch-xla"].status == "error"
    assert by["torch-xla"].fix == "python -m pip uninstall -y torch-xla libneuronxla"


def test_pypi_placeholder(site: Path, devdir: Path) -> None:
    make_torch(site, "2.14.0+cpu")
    make_dist(site, "torch-neuronx", "1.0")
    make_dist(site, "neuronx-cc", "1.0.post1")
    report, by = run(site, devdir)
    assert report.exit_code == 1
    assert by["torch-neuronx"].status == "error"
    assert "placeholder" in by["torch-neuronx"].summary
    assert by["torch-neuronx"].fix.startswith("python -m pip uninstall -y torch-neuronx && ")
    assert '"torch-neuronx==2.14.*"' in by["torch-neuronx"].fix  # family matches the torch present
    assert by["placeholders"].status == "error"
    assert "neuronx-cc 1.0.post1" in by["placeholders"].summary
    assert doctor.NEURON_INDEX in by["placeholders"].fix


@pytest.mark.parametrize(
    ("kwargs", "evidence"),
    [
        ({"version": "2.13.0+cu128"}, "torch/version.py"),
        ({"version": "2.13.0+cu128", "version_py": False}, "local version +cu128"),
        ({"version": "2.13.0", "cuda": "12.8"}, "torch/version.py: cuda"),
        (
            {"version": "2.13.0", "version_py": False,
             "requires": ['nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux"']},
            "requires nvidia-*",
        ),
        ({"version": "2.13.0", "version_py": False, "nvidia": True}, "nvidia-* installed"),
    ],
)
def test_cuda_build_beside_neuronx(site: Path, devdir: Path, kwargs: dict, evidence: str) -> None:
    kwargs = dict(kwargs)
    if kwargs.pop("nvidia", False):
        make_dist(site, "nvidia-cudnn-cu12", "9.10.2.21")
    cuda = kwargs.pop("cuda", "12.8" if "+cu" in kwargs["version"] else None)
    make_torch(site, cuda=cuda, **kwargs)
    make_dist(site, "torch-neuronx", "2.13.3.0.1")
    report, by = run(site, devdir)
    assert report.exit_code == 1
    finding = by["torch-build"]
    assert finding.status == "error", finding
    assert evidence in finding.detail
    assert '"torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu' in finding.fix
    assert by["pairing"].status == "ok"  # the version itself pairs; only the build is wrong


def test_cuda_build_without_neuronx_is_fine(site: Path, devdir: Path) -> None:
    make_torch(site, "2.13.0+cu128", cuda="12.8")
    report, by = run(site, devdir)
    assert report.exit_code == 0
    assert by["torch"].summary == "torch 2.13.0+cu128 (CUDA 12.8)"


@pytest.mark.parametrize(("value", "status"), [("0", "error"), ("false", "error"), ("1", "ok")])
def test_autoload_disabled(site: Path, devdir: Path, value: str, status: str) -> None:
    make_torch(site, "2.14.0+cpu")
    make_dist(site, "torch-neuronx", "2.14.3.0.2")
    report, by = run(site, devdir, environ={"TORCH_DEVICE_BACKEND_AUTOLOAD": value})
    assert by["autoload"].status == status
    assert report.exit_code == (1 if status == "error" else 0)
    if status == "error":
        assert "unset TORCH_DEVICE_BACKEND_AUTOLOAD" in by["autoload"].fix


def test_no_device_nodes_is_a_warning_only(site: Path, tmp_path: Path) -> None:
    make_torch(site, "2.14.0+cpu")
    make_dist(site, "torch-neuronx", "2.14.3.0.2")
    empty = tmp_path / "emptydev"
    empty.mkdir()
    report, by = run(site, empty)
    assert by["device"].status == "warning"
    assert report.exit_code == 0


@pytest.mark.parametrize(
    ("python", "status"), [("3.9.18", "warning"), ("3.11.7", "warning"), ("3.13.1", "ok"), ("3.15.0", "warning")]
)
def test_python_version_never_fails(site: Path, devdir: Path, python: str, status: str) -> None:
    make_torch(site, "2.14.0+cpu")
    make_dist(site, "torch-neuronx", "2.14.3.0.2")
    report, by = run(site, devdir, python=python)
    assert by["python"].status == status
    assert report.exit_code == 0


def test_neuronx_without_torch(site: Path, devdir: Path) -> None:
    make_dist(site, "torch-neuronx", "2.13.3.0.1")
    report, by = run(site, devdir)
    assert by["torch"].status == "error"
    assert '"torch==2.13.0"' in by["torch"].fix
    assert report.exit_code == 1


def test_two_versions_on_the_path(tmp_path: Path, devdir: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    make_torch(first, "2.14.0+cpu")
    make_dist(first, "torch-neuronx", "2.14.3.0.2")
    make_dist(second, "torch-neuronx", "2.9.0.2.10.1")
    env = doctor.collect([str(first), str(second)], environ={}, dev_dir=devdir, python_version="3.12.0")
    by = {f.check: f for f in doctor.diagnose(env).findings}
    assert env.version("torch-neuronx") == "2.14.3.0.2"  # the first one is the importable one
    assert by["duplicates"].status == "error"
    assert "2.9.0.2.10.1" in by["duplicates"].detail


def test_cli_json_with_path(site: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.delenv("TORCH_DEVICE_BACKEND_AUTOLOAD", raising=False)
    make_torch(site, "2.13.0+cpu")
    make_dist(site, "torch-neuronx", "2.14.3.0.2")
    assert main(["doctor", "--path", str(site), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 1
    failed = {f["check"] for f in data["findings"] if f["status"] == "error"}
    assert "pairing" in failed
    assert data["environment"]["distributions"]["torch-neuronx"][0]["version"] == "2.14.3.0.2"


def test_cli_plain_text_shows_fix(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_torch(site, "2.13.0+cpu")
    make_dist(site, "torch-neuronx", "1.0")
    assert main(["doctor", "--path", str(site)]) == 1
    out = capsys.readouterr().out
    assert "[error  ] torch-neuronx: torch-neuronx 1.0 is PyPI's empty placeholder" in out
    assert "fix: python -m pip uninstall -y torch-neuronx && " in out


def test_cli_help_and_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["doctor", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Exit codes: 0" in out and "--python" in out and "--json" in out
    assert main(["doctor", "--python", str(tmp_path / "no-such-python")]) == 2


def test_real_venv_via_python_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real throwaway venv: doctor must read *its* sys.path, not porter's (which has torch 2.13+cpu)."""
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the probe sees what a script there would see
    start = time.monotonic()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )
    make_torch(site, "2.14.0+cu128", cuda="12.8")
    make_dist(site, "torch-neuronx", "2.14.3.0.2")
    make_dist(site, "nvidia-cublas-cu12", "12.8.4.1")
    assert main(["doctor", "--python", str(python), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["environment"]["executable"].startswith(str(venv))
    assert data["environment"]["distributions"]["torch"][0]["version"] == "2.14.0+cu128"
    by = {f["check"]: f for f in data["findings"]}
    assert by["torch-build"]["status"] == "error"
    assert "nvidia-cublas-cu12" in by["torch-build"]["fix"]
    assert by["pairing"]["status"] == "ok"
    assert time.monotonic() - start < 10, "takes > 10 s: mark it slow"


def test_shipped_mixed_environment(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    """tests/data/doctor/mixed-env: every conflict at once, through the CLI."""
    monkeypatch.setenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    site = Path(__file__).parent / "data" / "doctor" / "mixed-env" / "site-packages"
    assert main(["doctor", "--path", str(site), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    failed = {f["check"] for f in data["findings"] if f["status"] == "error"}
    assert failed == {"pairing", "torch-xla", "torch-build", "autoload", "placeholders"}
    assert data["environment"]["torch_version_py"] == {"cuda": "12.8", "hip": None}


@pytest.mark.parametrize(
    ("version", "family"),
    [
        ("1.0", "placeholder"),
        ("1.13.1.1.13.0", "legacy"),
        ("2.9.0.2.10.16998", "legacy"),
        ("2.10.0.1", "native"),
        ("2.13.3.0.1", "native"),
        ("2.14.3.0.2", "native"),
        ("dev", "unknown"),
    ],
)
def test_neuronx_family(version: str, family: str) -> None:
    assert doctor.neuronx_family(version) == family


def test_rocm_build_beside_neuronx(site: Path, devdir: Path) -> None:
    make_torch(site, "2.14.0+rocm6.4", version_py=False)
    make_dist(site, "torch-neuronx", "2.14.3.0.2")
    report, by = run(site, devdir)
    assert by["torch-build"].status == "error"
    assert "ROCm 6.4" in by["torch-build"].summary
    assert report.exit_code == 1
