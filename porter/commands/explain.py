"""``porter explain CODE``: the documentation of any code porter emits."""

from __future__ import annotations

import click


@click.command("explain")
@click.argument("code")
def command(code: str) -> int:
    """Print what CODE does, why, before/after and how safe it is (exit 2 if unknown).

    Every code in `porter rules` has a page: Python rules and their review codes, and the codes
    of the non-Python file ports (pins, launchers, configs, containers).
    """
    # Imported here: rules load libcst, which other commands may not need.
    from porter.engine.registry import code_info

    info = code_info(code)
    if info is None:
        click.echo(f"porter: unknown rule code {code!r}; `porter rules` lists them", err=True)
        return 2
    click.echo(info.title)
    if info.rule != info.code:
        click.echo(f"Emitted by rule {info.rule} ({info.name}).")
    click.echo()
    click.echo(info.doc)
    return 0
