"""``porter gate``: the CLI over :mod:`porter.audit.gate`."""

from __future__ import annotations

import json
import sys

import click

from porter.audit import gate as gate_lib


def _render(result: gate_lib.GateResult) -> None:
    if sys.stdout.isatty():
        from rich.console import Console

        console = Console()
        style = "bold green" if result.verified else "bold red"
        text = ("PASS " if result.verified else "FAIL ") + result.message
        console.print(text, style=style, markup=False, highlight=False)
        return
    click.echo(("PASS " if result.verified else "FAIL ") + result.message)


@click.command(
    "gate",
    epilog="Exit codes: 0 verified for the requirement; 1 not verified (the message says what is "
    "missing); 2 errors (model not found, unreadable card, hub unreachable, bad usage).",
)
@click.argument("model")
@click.option(
    "--require",
    "require",
    type=click.Choice(["neuron"]),
    default="neuron",
    show_default=True,
    help="The verification to require: 'neuron' (a `neuron` or `neuron-emulated` tag plus the "
    "card's 'Hardware compatibility' section).",
)
@click.option(
    "--require-device",
    is_flag=True,
    help="Require a device run (tag `neuron`); an emulated-only verification fails.",
)
@click.option(
    "--instance",
    type=click.Choice(list(gate_lib.INSTANCE_FAMILIES)),
    default=None,
    help="Require a device run on this instance family (implies --require-device).",
)
@click.option(
    "--endpoint",
    default=None,
    metavar="URL",
    help="Hub endpoint for Hub ids (default: $HF_ENDPOINT, else https://huggingface.co).",
)
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit) to check.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def command(
    model: str,
    require: str,
    require_device: bool,
    instance: str | None,
    endpoint: str | None,
    revision: str | None,
    as_json: bool,
) -> int:
    """Fail CI unless MODEL's card records a Neuron verification.

    MODEL is a local model folder (its README.md is read) or a Hub id (tags from
    huggingface_hub.model_info, card from the same endpoint). Cards are written by `porter card`.
    """
    requirement = gate_lib.Requirement(require, device=require_device, instance=instance)
    try:
        result = gate_lib.gate(model, requirement, endpoint=endpoint, revision=revision)
    except gate_lib.GateError as error:
        if as_json:
            click.echo(json.dumps({"model": model, "error": str(error), "exit_code": gate_lib.EXIT_ERROR}))
        click.echo(f"porter gate: {error}", err=True)
        return gate_lib.EXIT_ERROR
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _render(result)
    return result.exit_code
