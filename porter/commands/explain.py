"""``porter explain CODE``: the rule's documentation."""

from __future__ import annotations

import inspect

import click

from porter.registry import rule_for_code


@click.command("explain")
@click.argument("code")
def command(code: str) -> int:
    """Print what rule CODE does, why, before/after and how safe it is (exit 2 if unknown)."""
    rule = rule_for_code(code)
    if rule is None:
        click.echo(f"porter: unknown rule code {code!r}; `porter rules` lists them", err=True)
        return 2
    wanted = code.strip().upper()
    title = rule.summary if wanted == rule.code else rule.extra_codes[wanted]
    click.echo(f"{wanted} ({rule.name}): {title}")
    if wanted != rule.code:
        click.echo(f"Emitted by rule {rule.code} ({rule.name}).")
    click.echo()
    click.echo(inspect.cleandoc(rule.__doc__ or ""))
    return 0
