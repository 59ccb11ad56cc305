"""``porter rules``: every rule with its code, name, safety and one line."""

from __future__ import annotations

import json

import click

from porter.filetypes import FILE_CODES
from porter.registry import all_rules


def rule_rows() -> list[tuple[str, str, str, str]]:
    """(code, name, safety, summary) for every Python rule code and every non-Python file code."""
    rows = []
    for rule in all_rules():
        for code in rule.all_codes():
            summary = rule.summary if code == rule.code else rule.extra_codes[code]
            rows.append((code, rule.name, rule.code_safety(code).value, summary))
    for code, summary in FILE_CODES.items():
        rows.append((code, "files", "review" if "review" in summary else "safe", summary))
    return sorted(rows)


@click.command("rules")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def command(as_json: bool) -> int:
    """List every rule code (built-in and plugins): code, rule name, safety, what it ports.

    Codes named "files" port dependency pins, launch scripts, configs and containers.
    """
    rows = rule_rows()
    if as_json:
        click.echo(json.dumps([dict(zip(("code", "name", "safety", "summary"), row)) for row in rows], indent=2))
        return 0
    width = max(len(row[1]) for row in rows) if rows else 0
    for code, name, safety, text in rows:
        click.echo(f"{code}  {name:<{width}}  {safety:<6}  {text}")
    return 0
