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


def test_readme_rule_table_matches_porter_rules() -> None:
    """The table between the rules markers is `porter rules --markdown` (regenerate it with
    `python tests/test_readme.py`)."""
    from porter.commands.rules import markdown_table, rule_rows

    text = (ROOT / "README.md").read_text()
    table = text.split("<!-- rules:start -->\n", 1)[1].split("<!-- rules:end -->", 1)[0]
    assert table == markdown_table(rule_rows())


if __name__ == "__main__":
    from porter.commands.rules import markdown_table, rule_rows

    readme = ROOT / "README.md"
    head, rest = readme.read_text().split("<!-- rules:start -->\n", 1)
    _, tail = rest.split("<!-- rules:end -->", 1)
    readme.write_text(head + "<!-- rules:start -->\n" + markdown_table(rule_rows()) + "<!-- rules:end -->" + tail)
