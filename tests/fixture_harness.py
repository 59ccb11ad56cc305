"""Shared fixture machinery: find cases, derive their options, run and compare.

Layout: ``tests/fixtures/<rule-name>/<case>.in.py`` with ``<case>.out.py`` (expected port; absent
means the file must stay byte-identical) and ``<case>.findings`` (one ``LINE CODE`` per expected
change or marker; absent means none). A folder named after a rule runs that rule's codes only;
a folder starting with ``_`` runs every rule. ``<case>.options.json`` overrides Options fields.

Set PORTER_UPDATE_FIXTURES=1 to (re)write ``.out.py``/``.findings`` from the current output —
then read every diff before committing: an updated fixture is a claim that the output is right.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.registry import all_rules
from porter.engine.results import FileResult
from porter.engine.rule import Rule

FIXTURES = Path(__file__).parent / "fixtures"
UPDATE = os.environ.get("PORTER_UPDATE_FIXTURES") == "1"


@dataclass(frozen=True)
class Case:
    source: Path

    @property
    def stem(self) -> str:
        return self.source.name[: -len(".in.py")]

    @property
    def folder(self) -> str:
        return self.source.parent.name

    @property
    def expected(self) -> Path:
        return self.source.with_name(f"{self.stem}.out.py")

    @property
    def findings(self) -> Path:
        return self.source.with_name(f"{self.stem}.findings")

    @property
    def options_file(self) -> Path:
        return self.source.with_name(f"{self.stem}.options.json")

    @property
    def id(self) -> str:
        return f"{self.folder}/{self.stem}"


def cases() -> list[Case]:
    return [Case(path) for path in sorted(FIXTURES.glob("*/*.in.py"))]


def options_for(case: Case) -> Options:
    fields: dict[str, object] = {}
    if not case.folder.startswith("_"):
        rule = next((rule for rule in all_rules() if rule.name == case.folder), None)
        if rule is None:
            raise AssertionError(f"fixture folder {case.folder!r} names no rule (see `porter rules`)")
        fields["select"] = rule.all_codes()
    if case.options_file.exists():
        loaded = json.loads(case.options_file.read_text())
        for key, value in loaded.items():
            fields[key] = tuple(value) if isinstance(value, list) else value
    return Options(**fields)  # type: ignore[arg-type]


def read_findings(case: Case) -> list[tuple[int, str]]:
    if not case.findings.exists():
        return []
    found = []
    for raw in case.findings.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            number, code = line.split()
            found.append((int(number), code))
    return sorted(found)


_PORTS: dict[tuple[bytes, str, Options, tuple[type[Rule], ...] | None], FileResult] = {}


def ported(data: bytes, path: str = "<string>", options: Options | None = None, rules: Sequence[type[Rule]] | None = None) -> FileResult:
    """``port_source``, remembered for the session: the sweeps (fixtures, prefilter agreement,
    markers, styles, CPU fallback) port the same bytes with the same options again and again.
    The port is a function of (bytes, path, options, rules) and its results are frozen, so one port
    answers them all. Tests about a fresh port (cache, workers, bytes kept, time limits) call
    ``port_source`` itself."""
    options = options or Options()
    key = (data, path, options, None if rules is None else tuple(rules))
    if key not in _PORTS:
        _PORTS[key] = port_source(data, path, options, rules)
    return _PORTS[key]
