"""Shared test settings.

Hypothesis: CI runs a derandomized profile (the same examples every run, so a red build is
reproducible); locally examples are random. ``HYPOTHESIS_PROFILE`` picks one explicitly.
Tests under ``tests/check/`` run scripts on the emulated device: they get the ``check`` marker, so
the fast loop (``pytest -m "not slow and not check and not corpus and not processes"``) leaves them out.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

_CHECK = Path(__file__).parent / "check"

# A core-only install (libcst, click, rich) collects and runs the engine tests; every check test
# needs torch, so the folder is left out without it (the other torch tests importorskip it).
if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["check/*"]


_MODULE_MARK = re.compile(r"^pytestmark = pytest\.mark\.(\w+)$", re.MULTILINE)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``-m "... not check ..."`` (the fast loop), ``tests/check/`` is not even imported: its
    modules load torch and torch-mlir (seconds) only for tests the selection drops. Likewise a
    module marked whole (``pytestmark = pytest.mark.corpus``) that the expression excludes: its
    collection alone (parametrizing over every fixture) costs seconds."""
    expression = config.getoption("markexpr", "") or ""
    if "not check" in expression and (collection_path == _CHECK or _CHECK in collection_path.parents):
        return True
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_") and " not " in f" {expression}":
        try:
            marks = _MODULE_MARK.findall(collection_path.read_text(encoding="utf-8"))
        except OSError:
            return None
        if any(re.search(rf"\bnot {mark}\b", expression) for mark in marks):
            return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _CHECK in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.check)
