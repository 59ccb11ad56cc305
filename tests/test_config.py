"""[tool.porter] in pyproject.toml: found upwards, validated, overridden by flags; `porter config`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from porter.cli import main
from porter.run.config import ConfigError, find_pyproject, load_config, to_options_fields

CUDA = b'import torch\nx = torch.zeros(2).cuda()\ny = torch.ones(2, device="cuda")\n'


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.porter]\n" + table)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_bytes(CUDA)
    return tmp_path


def test_nearest_pyproject_with_a_porter_table(tmp_path: Path) -> None:
    _project(tmp_path, 'style = "accelerator"\n')
    inner = tmp_path / "src" / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'inner'\n")  # no [tool.porter]: skipped
    assert find_pyproject(str(inner)) == str(tmp_path / "pyproject.toml")
    config = load_config(str(inner / "x.py"))
    assert config["style"] == "accelerator" and config.sources["style"] == str(tmp_path / "pyproject.toml")
    assert config.sources["jobs"] == "default"


def test_values_reach_the_options(tmp_path: Path) -> None:
    _project(tmp_path, 'select = ["nrn1"]\nignore = "NRN101"\nlog-interval = 50\ncompile-insertion = false\nall = true\n')
    fields = to_options_fields(load_config(str(tmp_path)))
    assert fields["select"] == ("NRN1",) and fields["ignore"] == ("NRN101",)
    assert fields["log_interval"] == 50 and fields["insert_compile"] is False and fields["all_files"] is True


@pytest.mark.parametrize(
    "table, message",
    [
        ("selct = []\n", "unknown [tool.porter] key 'selct'"),
        ("jobs = 'many'\n", "jobs must be an integer"),
        ('style = "cuda"\n', "style must be one of neuron, accelerator"),
        ("log-interval = 0\n", "log-interval must be at least 1"),
        ("select = [1]\n", "select must be a list of strings"),
        ("exclude = [\n", "not valid TOML"),
    ],
)
def test_bad_values_are_errors(tmp_path: Path, table: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, table)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(str(tmp_path))
    assert main(["migrate", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_config_applies_and_flags_override(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, 'ignore = ["NRN101"]\nexclude = ["skipme"]\n')
    (tmp_path / "skipme").mkdir()
    (tmp_path / "skipme" / "t.py").write_bytes(CUDA)
    assert main(["migrate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # No NRN101 change line (the verifier may still name NRN101 as the rule for what is left).
    assert " NRN102 " in out and " NRN101 " not in out and "skipme" not in out
    assert main(["migrate", "--ignore", "NRN990", str(tmp_path)]) == 0
    assert "NRN101" in capsys.readouterr().out  # --ignore replaces the file's ignore list
    assert main(["migrate", "--style", "accelerator", str(tmp_path / "src")]) == 0
    assert "torch.accelerator" in capsys.readouterr().out


def test_porter_config_prints_the_effective_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, "jobs = 3\n")
    assert main(["config", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"jobs = 3  # {tmp_path / 'pyproject.toml'}" in out
    assert 'style = "neuron"  # default' in out
    assert main(["config", "--json", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["values"]["jobs"] == 3 and data["config_file"] == str(tmp_path / "pyproject.toml")


def test_no_pyproject_means_defaults(tmp_path: Path) -> None:
    config = load_config(str(tmp_path))
    assert config.path is None and config["select"] == [] and config["cache"] is True
