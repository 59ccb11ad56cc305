"""The README opens with the two set-up commands, and CI runs the second one verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text, flags=re.S)[:2]


def test_readme_opens_with_two_setup_commands() -> None:
    main_job, tests = _readme_commands()
    assert "pip install" in main_job and "porter migrate" in main_job
    assert "pip install" in tests and tests.rstrip().endswith("pytest")


def test_ci_runs_the_readme_test_command() -> None:
    _, tests = _readme_commands()
    assert tests.strip() in (ROOT / ".ci" / "run").read_text()
