"""Jupyter notebooks: code cells ported, IPython magics masked and restored, JSON layout kept.

Cases live in ``tests/data/notebooks``: ``<case>.in.ipynb`` with ``<case>.out.ipynb`` (absent:
must stay byte-identical) and ``<case>.findings`` (``cell N LINE CODE``). They run with the
foundation codes NRN101-NRN103 only, so other rules' evolution does not move them.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from porter.cli import main
from porter.engine.options import Options
from porter.engine.results import Success, Unchanged
from porter.run.notebooks import dump_like, mask_magics, port_notebook

DATA = Path(__file__).parent / "data" / "notebooks"
CASES = sorted(DATA.glob("*.in.ipynb"))
OPTIONS = Options(select=("NRN101", "NRN102", "NRN103"))


def _stem(path: Path) -> str:
    return path.name[: -len(".in.ipynb")]


@pytest.mark.parametrize("source", CASES, ids=[_stem(case) for case in CASES])
def test_notebook_case(source: Path) -> None:
    stem = _stem(source)
    data = source.read_bytes()
    result = port_notebook(data, source.name, OPTIONS)
    expected_file = DATA / f"{stem}.out.ipynb"
    if not expected_file.exists():
        assert isinstance(result, Unchanged), f"{stem} must stay byte-identical"
        return
    assert isinstance(result, Success), result
    assert result.new == expected_file.read_bytes()
    findings = DATA / f"{stem}.findings"
    found = [f"{c.message.split(']')[0][1:]} {c.line} {c.code}" for c in result.changes]
    assert found == findings.read_text().splitlines()
    again = port_notebook(result.new, source.name, OPTIONS)
    assert isinstance(again, Unchanged), "porting the ported notebook again changed it"
    nbformat.validate(nbformat.reads(result.new.decode("utf-8"), as_version=nbformat.NO_CONVERT))


def test_magics_are_restored_and_outputs_untouched() -> None:
    data = (DATA / "magics.in.ipynb").read_bytes()
    result = port_notebook(data, "magics.ipynb", OPTIONS)
    assert isinstance(result, Success)
    before, after = json.loads(data), json.loads(result.new)
    assert before["metadata"] == after["metadata"]
    for old, new in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
    ported = "".join(after["cells"][2]["source"])
    for magic in ("    !nvidia-smi --query-gpu=memory.used --format=csv\n", "gpus = !nvidia-smi -L\n", "%time y = model(x)"):
        assert magic in ported
    assert "(3\n         % 2)" in ported  # a modulo continuation line is code, not a magic
    assert after["cells"][3] == before["cells"][3]  # %%bash cell: not Python, left alone
    assert "torch.neuron.synchronize()" in after["cells"][4]["source"]  # %%time body is ported
    assert after["cells"][0] == before["cells"][0]  # markdown mentioning cuda is untouched


def test_mask_magics_keeps_structure() -> None:
    masked, magics = mask_magics("for i in x:\n    !echo $i\nfiles = !ls\ny = (a\n     % b)\n%matplotlib inline")  # type: ignore[misc]
    assert magics == ["    !echo $i", "files = !ls", "%matplotlib inline"]
    compile(masked, "<cell>", "exec")
    assert mask_magics("%%bash\necho cuda\n") is None


@pytest.mark.parametrize("source", CASES, ids=[_stem(case) for case in CASES])
def test_json_layout_is_detected(source: Path) -> None:
    data = source.read_bytes()
    assert dump_like(json.loads(data), data) == data


def test_migrate_ports_notebooks_in_a_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nb.ipynb").write_bytes((DATA / "alias_indent2.in.ipynb").read_bytes())
    (tmp_path / "clean.ipynb").write_bytes((DATA / "noop_indent2.in.ipynb").read_bytes())
    args = ["migrate", "--write", "--diff", "--no-cache", "-j1", "--select", "NRN101,NRN102,NRN103", str(tmp_path)]
    assert main(args) == 0
    assert (tmp_path / "nb.ipynb").read_bytes() == (DATA / "alias_indent2.out.ipynb").read_bytes()
    assert (tmp_path / "clean.ipynb").read_bytes() == (DATA / "noop_indent2.in.ipynb").read_bytes()
    assert "[cell 2]" in capsys.readouterr().out


def test_broken_notebook_is_a_parse_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.ipynb").write_text('{"cells": [')
    assert main(["migrate", "--no-cache", str(tmp_path)]) == 2
    assert "not a valid notebook" in capsys.readouterr().err
