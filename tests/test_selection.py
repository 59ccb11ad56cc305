"""--select/--ignore and [tool.porter] select/ignore are checked against the codes porter emits."""

from __future__ import annotations

import os

import pytest

from porter.cli import main
from porter.engine.registry import SelectionError, catalogue, normalize_selection


def test_codes_prefixes_all_and_rule_names_are_accepted() -> None:
    device = next(info for info in catalogue().values() if info.name == "device-strings")
    own = tuple(code for code, info in catalogue().items() if info.name == "device-strings")
    assert device.code in own
    assert normalize_selection(["nrn1, ALL", "NRN20"]) == ("NRN1", "ALL", "NRN20")
    assert normalize_selection(["device-strings"]) == own


@pytest.mark.parametrize("item, hint", [("BOGUS", "porter rules"), ("device-string", "did you mean device-strings?"), ("NRN1O1", "did you mean NRN101?")])
def test_unknown_items_are_an_error_with_a_suggestion(item: str, hint: str) -> None:
    with pytest.raises(SelectionError, match=hint):
        normalize_selection([item])


def _file(folder: str) -> str:
    path = os.path.join(folder, "train.py")
    with open(path, "w") as handle:
        handle.write('import torch\nx = torch.zeros(2, device="cuda")\n')
    return path


@pytest.mark.parametrize("flag", ["--select", "--ignore"])
def test_a_bogus_flag_is_a_usage_error(tmp_path: object, flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", _file(str(tmp_path)), flag, "BOGUS"]) == 2
    assert f"{flag} BOGUS" in capsys.readouterr().err


def test_a_bogus_config_selection_is_a_usage_error(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    folder = str(tmp_path)
    with open(os.path.join(folder, "pyproject.toml"), "w") as handle:
        handle.write('[tool.porter]\nselect = ["BOGUS"]\n')
    assert main(["migrate", _file(folder)]) == 2
    error = capsys.readouterr().err
    assert "[tool.porter] select" in error and "BOGUS" in error


def test_a_rule_name_selects_that_rule(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(str(tmp_path))
    assert main(["migrate", path, "--select", "device-strings", "--no-cache", "--no-progress"]) == 0
    assert 'device="neuron"' in capsys.readouterr().out
    assert main(["migrate", path, "--ignore", "device-strings", "--no-cache", "--no-progress"]) == 0
    assert 'device="neuron"' not in capsys.readouterr().out
