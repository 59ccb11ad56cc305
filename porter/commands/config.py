"""``porter config``: the effective configuration for a path, and where each value comes from."""

from __future__ import annotations

import inspect

import click

from porter.run.config import SETTINGS, ConfigError, load_config, render


@click.command("config")
@click.argument("path", required=False, type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print the configuration as JSON.")
def command(path: str | None, as_json: bool) -> int:
    """Print the effective [tool.porter] settings for PATH (default: the current folder).

    Settings come from the nearest pyproject.toml with a [tool.porter] table, at or above PATH;
    each line says whether its value is porter's default or from that file. `porter migrate`
    flags override these for a run.
    """
    try:
        config = load_config(path)
    except ConfigError as error:
        click.echo(f"porter: {error}", err=True)
        return 2
    click.echo(render(config, as_json))
    return 0


command.help = inspect.cleandoc(command.help or "") + "\n\n\b\nKeys:\n" + "\n".join(f"  {s.key:<18} {s.help}" for s in SETTINGS)
