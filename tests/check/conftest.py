"""Shared helpers for porter check's tests: run the real CLI once per argument list per session.

Every check starts subprocesses that import torch (seconds each on a shared 2-core machine), so a
run is cached and shared by the tests that read different parts of the same report.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from porter.cli import main

SCRIPTS = Path(__file__).parent / "scripts"
_CACHE: dict[tuple[str, ...], tuple[int, dict[str, Any]]] = {}


def marked_line(script: str, tag: str) -> int:
    """The 1-based line of ``script`` carrying ``# TAG`` (tests name lines, not numbers)."""
    for number, text in enumerate((SCRIPTS / script).read_text().splitlines(), start=1):
        if f"# {tag}" in text:
            return number
    raise AssertionError(f"{tag} not found in {script}")


def check(script: str, *args: str, tmp_root: Path | None = None) -> tuple[int, dict[str, Any]]:
    """Run ``porter check SCRIPT ARGS --json FILE``; return (exit code, report dict)."""
    key = (script, *args)
    if key not in _CACHE:
        out_dir = Path(os.environ.get("PYTEST_CHECK_TMP", "/tmp")) / "porter-check-tests"
        out_dir.mkdir(parents=True, exist_ok=True)
        json_path = out_dir / (f"{abs(hash(key))}.json")
        code = main(["check", str(SCRIPTS / script), "--json", str(json_path), *args])
        _CACHE[key] = (code, json.loads(json_path.read_text()))
    return _CACHE[key]


def findings(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["kind"] == kind]


@pytest.fixture(scope="session")
def scripts_dir() -> Path:
    return SCRIPTS
