"""``porter rules``: every rule with its code, name, safety and one line."""

from __future__ import annotations

import json

import click


def rule_rows() -> list[tuple[str, str, str, str]]:
    """(code, name, safety, summary) for every Python rule code and every non-Python file code."""
    # Imported here: loading the rules means loading libcst, which `porter --help` and cached
    # `porter migrate` runs never need.
    from porter.engine.registry import catalogue

    return [(info.code, info.name, info.safety.value, info.summary) for info in catalogue().values()]


def markdown_table(rows: list[tuple[str, str, str, str]]) -> str:
    lines = ["| code | rule | safety | what it ports |", "|---|---|---|---|"]
    for code, name, safety, text in rows:
        escaped = text.replace("|", "\\|")
        lines.append(f"| {code} | {name} | {safety} | {escaped} |")
    return "\n".join(lines) + "\n"


@click.command("rules")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.option("--markdown", is_flag=True, help="Print the list as a Markdown table (as in the README).")
def command(as_json: bool, markdown: bool) -> int:
    """List every rule code (built-in and plugins): code, rule name, safety, what it ports.

    Codes named "files" port dependency pins, launch scripts, configs and containers.
    """
    rows = rule_rows()
    if markdown:
        click.echo(markdown_table(rows), nl=False)
        return 0
    if as_json:
        click.echo(json.dumps([dict(zip(("code", "name", "safety", "summary"), row)) for row in rows], indent=2))
        return 0
    width = max(len(row[1]) for row in rows) if rows else 0
    for code, name, safety, text in rows:
        click.echo(f"{code}  {name:<{width}}  {safety:<6}  {text}")
    return 0
