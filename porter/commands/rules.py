"""``porter rules``: every rule with its code, name, safety and one line."""

from __future__ import annotations

import json

import click

from porter.registry import all_rules


@click.command("rules")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def command(as_json: bool) -> int:
    """List every rule (built-in and plugins): code, name, safety, what it ports."""
    rows = []
    for rule in all_rules():
        rows.append((rule.code, rule.name, rule.safety.value, rule.summary))
        for code, text in rule.extra_codes.items():
            rows.append((code, rule.name, "review", text))
    rows.sort()
    if as_json:
        click.echo(json.dumps([dict(zip(("code", "name", "safety", "summary"), row)) for row in rows], indent=2))
        return 0
    width = max(len(row[1]) for row in rows) if rows else 0
    for code, name, safety, text in rows:
        click.echo(f"{code}  {name:<{width}}  {safety:<6}  {text}")
    return 0
