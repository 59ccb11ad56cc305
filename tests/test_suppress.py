"""Suppression comments (``# noqa``, ``# porter: ignore[...]``, ``# porter: skip-file``) and
``[tool.porter] per-file-ignores``: the engine drops what they name, whole, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from porter.cli import main
from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.results import Success, Unchanged
from porter.engine.suppress import Suppressions, skip_file


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def _port(source: str, options: Options | None = None) -> tuple[str, list[tuple[int, str]]]:
    result = port_source(source.encode(), "t.py", options)
    if isinstance(result, Success):
        return result.new.decode(), [(change.line, change.code) for change in result.changes]
    assert isinstance(result, Unchanged), result
    return source, []


def test_noqa_with_a_code_keeps_that_code_on_that_line_only() -> None:
    source = 'import torch\nx = torch.zeros(1, device="cuda").cuda()  # noqa: NRN101\ny = torch.zeros(1, device="cuda")\n'
    new, changes = _port(source)
    assert 'x = torch.zeros(1, device="cuda").to("neuron")  # noqa: NRN101' in new  # NRN102 still applies
    assert 'y = torch.zeros(1, device="neuron")' in new
    assert (2, "NRN101") not in changes and (2, "NRN102") in changes and (3, "NRN101") in changes


def test_bare_noqa_prefixes_and_several_codes() -> None:
    lines = [
        "import torch",
        'a = torch.zeros(1, device="cuda").cuda()  # noqa',
        'b = torch.zeros(1, device="cuda").cuda()  # noqa: NRN1',
        'c = torch.zeros(1, device="cuda").cuda()  # NOQA:NRN101,NRN102',
        'd = torch.zeros(1, device="cuda").cuda()  # noqa: NRN101 NRN102',
        'e = torch.zeros(1, device="cuda").cuda()  # noqa: E501',
    ]
    new, changes = _port("\n".join(lines) + "\n")
    assert new.splitlines()[1:5] == lines[1:5]
    assert {line for line, _ in changes} == {6}  # another tool's code suppresses nothing here


def test_multi_line_statement_first_line_covers_it_and_a_later_line_covers_itself() -> None:
    source = (
        "import torch\n"
        "y = torch.ones(  # noqa: NRN101\n"
        '    2, device="cuda",\n'
        ")\n"
        "z = torch.ones(\n"
        '    2, device="cuda",  # noqa: NRN101\n'
        ").cuda()\n"
        "w = torch.ones(\n"
        '    2, device="cuda",\n'
        ")  # noqa: NRN101\n"
    )
    new, changes = _port(source)
    assert new.count('device="cuda"') == 2  # y and z kept; a comment on the closing line is not the statement's
    assert (5, "NRN102") in changes and (9, "NRN101") in changes
    assert ").to(\"neuron\")" in new


def test_block_ignore_covers_the_compound_statement_with_its_clauses() -> None:
    source = (
        "import torch\n"
        "# porter: ignore[NRN1]\n"
        "if torch.cuda.is_available():\n"
        "    torch.cuda.synchronize()\n"
        "else:\n"
        "    a = torch.zeros(1).cuda()\n"
        "b = torch.zeros(1).cuda()\n"
    )
    new, changes = _port(source)
    assert new.splitlines()[:6] == source.splitlines()[:6]
    assert changes == [(7, "NRN102")]


def test_block_ignore_above_decorators_covers_the_definition() -> None:
    source = (
        "import functools\nimport torch\n"
        "# porter: ignore\n"
        "@functools.lru_cache\n"
        "def f():\n"
        '    return torch.zeros(1, device="cuda")\n'
        'g = torch.zeros(1, device="cuda")\n'
    )
    new, changes = _port(source)
    assert changes == [(7, "NRN101")]


def test_a_directive_inside_a_string_is_not_one() -> None:
    source = 'import torch\nx = torch.zeros(1).cuda(); s = "# noqa"\n'
    _, changes = _port(source)
    assert changes == [(2, "NRN102")]


def test_skip_file_in_the_first_20_lines_only() -> None:
    body = "import torch\nx = torch.zeros(1).cuda()\n"
    result = port_source(("# porter: skip-file\n" + body).encode(), "t.py")
    assert isinstance(result, Unchanged) and result.skipped == "skip-file"
    late = "\n" * 20 + "# porter: skip-file\n" + body
    assert isinstance(port_source(late.encode(), "t.py"), Success)
    assert not skip_file('s = """\n# porter: skip-file\n"""\n')  # in a string, not a comment


def test_no_directive_costs_nothing() -> None:
    assert Suppressions.of("import torch\nx = torch.zeros(1).cuda()  # a comment\n") is None


def test_options_suppress_drops_codes_by_prefix() -> None:
    source = 'import torch\nx = torch.zeros(1, device="cuda").cuda()\n'
    _, changes = _port(source, Options(suppress=("NRN102",)))
    assert changes == [(2, "NRN101")]
    _, changes = _port(source, Options(select=("NRN102",), suppress=("NRN1",)))  # wins over a narrower select
    assert changes == []


def test_check_passes_a_deliberate_cuda_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "bench.py"
    script.write_text('import torch\nx = torch.zeros(1, device="cuda")  # noqa: NRN101\n')
    assert main(["migrate", "--check", "--no-progress", str(script)]) == 0
    script.write_text('import torch\nx = torch.zeros(1, device="cuda")\n')
    assert main(["migrate", "--check", "--no-progress", str(script)]) == 1
    capsys.readouterr()


def test_check_passes_a_deliberate_cuda_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "bench.py"
    script.write_text(
        "import torch\n# porter: ignore\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"
        "    print(torch.cuda.max_memory_allocated())\n"
    )
    assert main(["migrate", "--check", "--no-progress", str(script)]) == 0
    capsys.readouterr()


def test_per_file_ignores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.porter]\nper-file-ignores = {"tests/*" = ["NRN1"], "b.py" = ["NRN102"]}\n')
    code = 'import torch\nx = torch.zeros(1).cuda()\ny = torch.zeros(1, device="cuda")\n'
    for name in ("tests/deep/t.py", "src/a.py", "src/b.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(code)
    assert main(["migrate", "--no-diff", "--no-progress", "-j1", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "t.py" not in out
    assert "a.py:2 NRN102" in out and "a.py:3 NRN101" in out
    assert "b.py:3 NRN101" in out and "b.py:2" not in out
    assert main(["migrate", "--check", "--no-progress", str(tmp_path / "tests")]) == 0


def test_per_file_ignores_are_validated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.porter]\nper-file-ignores = {"tests/*" = ["NRN9X"]}\n')
    (tmp_path / "a.py").write_text("import torch\n")
    assert main(["migrate", str(tmp_path)]) == 2
    assert "NRN9X" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text('[tool.porter]\nper-file-ignores = ["NRN1"]\n')
    assert main(["migrate", str(tmp_path)]) == 2
    assert "per-file-ignores must be a table" in capsys.readouterr().err


def test_the_verifier_is_quiet_on_suppressed_lines_only() -> None:
    kept = 'import torch\nx = torch.zeros(1, device="cuda")\n'
    found = port_source(kept.encode(), "t.py", Options(ignore=("NRN101",)))
    assert [(f.line, f.code) for f in found.findings] == [(2, "NRN101")]  # type: ignore[attr-defined]
    for comment in ("  # noqa: NRN101", "  # noqa"):
        quiet = port_source(kept.replace('"cuda")\n', '"cuda")' + comment + "\n").encode(), "t.py")
        assert isinstance(quiet, Unchanged) and quiet.findings == ()
    other = port_source(kept.replace(")\n", ")  # noqa: NRN102\n").encode(), "t.py", Options(ignore=("NRN101",)))
    assert [(f.line, f.code) for f in other.findings] == [(2, "NRN101")]  # type: ignore[attr-defined]
    # In a changed file the findings are at lines of the output, filtered by the output's comments.
    mixed = port_source(b'import torch\ny = torch.ones(1).cuda()\nx = torch.zeros(1, device="cuda")  # noqa: NRN101\n', "t.py")
    assert isinstance(mixed, Success) and mixed.findings == ()


def test_per_file_ignores_reach_non_python_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pins = tmp_path / "requirements.txt"
    pins.write_text("torch==2.1.0+cu121\n")
    assert main(["migrate", "--files", "--check", "--no-progress", str(pins)]) == 1
    (tmp_path / "pyproject.toml").write_text('[tool.porter]\nper-file-ignores = {"requirements.txt" = ["NRN99"]}\n')
    assert main(["migrate", "--files", "--check", "--no-progress", str(pins)]) == 0
    capsys.readouterr()


def test_inert_directives_are_those_that_name_no_code_porter_reports() -> None:
    from porter.engine.suppress import inert

    codes = ["NRN102", "XYZ201"]
    assert inert("x = 1  # noqa: F401\ny = 2  # noqa: E501, W291\n", codes)
    assert inert('s = "# noqa: F401"\n', codes)
    assert not inert("x = 1  # noqa\n", codes)  # bare: every code
    assert not inert("x = 1  # noqa: NRN1\n", codes)
    assert not inert("x = 1  # noqa: N\n", codes)
    assert not inert("x = 1  # noqa: XYZ2\n", codes)  # a plugin rule's code
    assert not inert("x = 1  # noqa: F401 # noqa\n", codes)
    assert not inert('s = "#"  # noqa\n', codes)
    assert not inert("# porter: ignore[F401]\nx = 1\n", codes)


INERT_CASES = [
    "import torch  # noqa: F401\nx = torch.zeros(1).cuda()  # noqa: E501\ntorch.cuda.synchronize()\n",
    'import torch\nmsg = "# noqa"\nx = y.cuda()  # noqa: F821\nprint(torch.cuda.is_available())\n',
    "import torch\nx = y.cuda()  # noqa: NRN102\nz = w.cuda()  # noqa: F401\ntorch.cuda.empty_cache()\n",
    "import torch  # noqa\nx = y.cuda()\n",
    'import torch\ndevice = "cuda"  # noqa: E501\ntorch.cuda.set_device(0)  # noqa: F401\nm = torch.nn.DataParallel(m)\n',
]


# Only NRN102 ported: the verifier finds the torch.cuda call left (NRN103), which a directive may cover.
FINDING_CASES = [
    "import torch\nx = y.cuda()  # noqa: F401\ntorch.cuda.synchronize()  # noqa: E501\n",
    "import torch\nx = y.cuda()  # noqa: F401\ntorch.cuda.synchronize()  # noqa: NRN103\n",
    'import torch\nx = y.cuda()\nmsg = "# noqa"\ntorch.cuda.synchronize()\n',
    'import torch\nx = y.cuda()\nmsg = "# noqa"\ntorch.cuda.synchronize()  # noqa: F401\n',
]


@pytest.mark.parametrize(("source", "options"), [(case, Options(repo_in_port=True)) for case in INERT_CASES]
                         + [(case, Options(repo_in_port=True, select=("NRN102",))) for case in FINDING_CASES])
def test_inert_directives_port_as_a_full_scan_does(source: str, options: Options, monkeypatch: pytest.MonkeyPatch) -> None:
    """With directives that cover nothing porter reports, the port skips lexing the file; the
    result (text, changes, verifier findings) is the one the full scan gives."""
    import porter.engine.core as core

    quick = port_source(source.encode(), "t.py", options)
    monkeypatch.setattr(core, "inert", lambda text, emitted: False)
    monkeypatch.setattr("porter.engine.suppress.inert", lambda text, emitted: False)
    full = port_source(source.encode(), "t.py", options)
    assert quick == full
    assert isinstance(quick, Success) and quick.changes


def test_a_directive_naming_a_verifier_code_no_rule_of_the_port_emits_still_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifier's findings carry NRN codes of rules that may not run on the file (here only
    NRN102 runs, and the torch.cuda call it leaves is found as NRN103): a directive naming one is
    not inert."""
    import porter.engine.core as core
    from porter.rules.cuda_method import CudaMethod

    source = b"import torch\nx = y.cuda()\ntorch.cuda.synchronize()  # noqa: NRN103\n"
    quick = port_source(source, "t.py", Options(repo_in_port=True), rules=[CudaMethod])
    monkeypatch.setattr(core, "inert", lambda text, emitted: False)
    monkeypatch.setattr("porter.engine.suppress.inert", lambda text, emitted: False)
    assert quick == port_source(source, "t.py", Options(repo_in_port=True), rules=[CudaMethod])
    assert isinstance(quick, Success) and not quick.findings
