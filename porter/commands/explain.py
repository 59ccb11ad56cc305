"""``porter explain CODE``: the rule's documentation."""

from __future__ import annotations

import inspect

import click



@click.command("explain")
@click.argument("code")
def command(code: str) -> int:
    """Print what rule CODE does, why, before/after and how safe it is (exit 2 if unknown)."""
    from porter import filetypes  # imported here: rules load libcst, which other commands may not need
    from porter.engine.registry import rule_for_code

    wanted = code.strip().upper()
    rule = rule_for_code(wanted)
    if rule is None:
        text = filetypes.explain(wanted)
        if text is None:
            click.echo(f"porter: unknown rule code {code!r}; `porter rules` lists them", err=True)
            return 2
        click.echo(f"{wanted} (files): {filetypes.FILE_CODES[wanted]}")
        click.echo()
        click.echo(text)
        return 0
    title = rule.summary if wanted == rule.code else rule.extra_codes[wanted]
    click.echo(f"{wanted} ({rule.name}): {title}")
    if wanted != rule.code:
        click.echo(f"Emitted by rule {rule.code} ({rule.name}).")
    click.echo()
    click.echo(inspect.cleandoc(rule.__doc__ or ""))
    return 0
