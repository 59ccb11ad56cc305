"""Fixture tests of the non-Python ports (``porter.filetypes``).

Layout: ``tests/fixtures_files/<kind>/<case>.in.<ext>`` with ``<case>.out.<ext>`` (the expected
port; absent: the file must come back byte-identical) and ``<case>.findings`` (``LINE CODE`` per
expected change or marker, original line numbers; absent: none). The case is ported under a
file name that selects its kind: ``_VIRTUAL[<kind>]`` (``<ext>`` replaces ``{ext}``), or the
name in ``<case>.path``. ``<case>.options.json`` sets Options fields. Every case is also ported
a second time: the output must not change (idempotency), and must parse in its format.

``PORTER_UPDATE_FIXTURES=1`` rewrites ``.out``/``.findings`` from the current output — read
every diff before keeping it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from porter.engine.options import Options
from porter.engine.results import Failure, Success, Unchanged
from porter.filetypes import kind_of, port_file

FIXTURES = Path(__file__).parent / "fixtures_files"
UPDATE = os.environ.get("PORTER_UPDATE_FIXTURES") == "1"

_VIRTUAL = {
    "requirements": "requirements.{ext}",
    "pyproject": "pyproject.toml",
    "setup-cfg": "setup.cfg",
    "setup-py": "setup.py",
    "conda": "environment.{ext}",
    "shell": "run.{ext}",
    "slurm": "job.{ext}",
    "make": "Makefile",
    "procfile": "Procfile",
    "docker": "Dockerfile",
    "yaml": "config.{ext}",
    "json": "config.{ext}",
    "toml": "config.{ext}",
}


@dataclass(frozen=True)
class Case:
    source: Path

    @property
    def kind(self) -> str:
        return self.source.parent.name

    @property
    def stem(self) -> str:
        return self.source.name.split(".in.", 1)[0]

    @property
    def ext(self) -> str:
        return self.source.name.split(".in.", 1)[1]

    @property
    def expected(self) -> Path:
        return self.source.with_name(f"{self.stem}.out.{self.ext}")

    @property
    def findings(self) -> Path:
        return self.source.with_name(f"{self.stem}.findings")

    @property
    def virtual_path(self) -> str:
        override = self.source.with_name(f"{self.stem}.path")
        if override.exists():
            return override.read_text().strip()
        return _VIRTUAL[self.kind].format(ext=self.ext)

    @property
    def options(self) -> Options:
        file = self.source.with_name(f"{self.stem}.options.json")
        fields = json.loads(file.read_text()) if file.exists() else {}
        for name in ("select", "ignore", "extra"):
            if name in fields:
                fields[name] = tuple(tuple(v) if isinstance(v, list) else v for v in fields[name])
        return Options(**fields)

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.stem}"


def cases() -> list[Case]:
    return [Case(path) for path in sorted(FIXTURES.glob("*/*.in.*"))]


def _findings(result: object) -> str:
    if not isinstance(result, Success):
        return ""
    return "".join(f"{change.line} {change.code}\n" for change in result.changes)


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.id)
def test_fixture(case: Case) -> None:
    data = case.source.read_bytes()
    assert kind_of(case.virtual_path, data[:64]) is not None, f"{case.virtual_path} is not a kind porter ports"
    result = port_file(case.virtual_path, data, case.options)
    assert not isinstance(result, Failure), result.reason  # type: ignore[union-attr]
    new = result.new if isinstance(result, Success) else data
    if UPDATE:
        if new != data:
            case.expected.write_bytes(new)
        elif case.expected.exists():
            case.expected.unlink()
        found = _findings(result)
        if found:
            case.findings.write_text(found)
        elif case.findings.exists():
            case.findings.unlink()
    expected = case.expected.read_bytes() if case.expected.exists() else data
    assert new == expected
    want = case.findings.read_text() if case.findings.exists() else ""
    assert _findings(result) == want
    # Idempotent: the output ported again is byte-identical.
    again = port_file(case.virtual_path, new, case.options)
    assert not isinstance(again, Failure), again.reason  # type: ignore[union-attr]
    if isinstance(again, Success):
        assert again.new == new, "second run changed the file"


def test_every_kind_has_golden_noop_and_alias_cases() -> None:
    by_kind: dict[str, list[Case]] = {}
    for case in cases():
        by_kind.setdefault(case.kind, []).append(case)
    assert set(by_kind) == set(_VIRTUAL), "a kind without fixtures, or a fixture folder with no kind"
    for kind, found in by_kind.items():
        assert any(c.stem.startswith("noop") for c in found), f"{kind}: no noop case"
        assert any(c.stem.startswith("alias") for c in found), f"{kind}: no alias case"
        assert any(c.expected.exists() for c in found), f"{kind}: no golden case"
        for case in found:
            if case.stem.startswith("noop"):
                assert not case.expected.exists(), f"{case.id}: a noop case must stay byte-identical"


def test_noop_cases_are_unchanged_results() -> None:
    for case in cases():
        if case.stem.startswith("noop"):
            result = port_file(case.virtual_path, case.source.read_bytes(), case.options)
            assert isinstance(result, Unchanged), case.id
