"""``porter card``: the CLI over :mod:`porter.audit.card`."""

from __future__ import annotations

import json
import sys

import click

from porter.audit import card


def _render(result: card.CardResult, dry_run: bool) -> None:
    v = result.verification
    action = "would write" if dry_run and result.changed else (
        "created" if result.created else ("updated" if result.changed else "unchanged")
    )
    kind = f"device verification on {v.instance_family}" if v.is_device else "emulated verification"
    lines = [
        f"{action}: {result.path}",
        f"recorded: {kind} ({v.date}, torch {v.torch or '?'}, torch-neuronx {v.torch_neuronx or '?'})",
        f"tags: {', '.join(result.tags) or '(none)'}",
    ]
    if not v.is_device:
        lines.append("note: emulated only (Dynamo/AOTAutograd/StableHLO on CPU), not a device verification")
    if sys.stdout.isatty():
        from rich.console import Console

        console = Console()
        for line in lines:
            console.print(line, highlight=False, markup=False)
    else:
        for line in lines:
            click.echo(line)


@click.command(
    "card",
    epilog="Exit codes: 0 card written (or already up to date); 1 the report records a failed check, "
    "nothing written; 2 errors (unreadable or unusable report, unparsable card front matter, an "
    "emulated report over a device verification without --allow-downgrade).",
)
@click.argument("report", type=click.Path(dir_okay=False))
@click.argument("model", type=click.Path(), default=".")
@click.option(
    "--allow-downgrade",
    is_flag=True,
    help="Let an emulated report replace a device verification already on the card.",
)
@click.option(
    "--instance",
    type=click.Choice(["trn2", "trn3"]),
    default=None,
    help="Instance family of a device run, when the report does not name it (it must agree when it does).",
)
@click.option("--dry-run", is_flag=True, help="Do not write; print the new card to stdout instead.")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
def command(
    report: str, model: str, allow_downgrade: bool, instance: str | None, dry_run: bool, as_json: bool
) -> int:
    """Record a `porter check --json` REPORT in MODEL's model card (README.md).

    MODEL is a model folder (its README.md is used) or a README path; default: the current folder.
    A device report tags the card `neuron` plus its instance family (trn2/trn3); an emulated report
    tags it `neuron-emulated` only. The "Hardware compatibility" section is added or replaced; the rest
    of the body is kept byte-for-byte and the front matter keeps its data (huggingface_hub re-serialises
    the YAML). Running it twice with the same report changes nothing.
    """
    try:
        verification = card.read_report(report, instance=instance)
        result, text = card.write_card(
            model, verification, allow_downgrade=allow_downgrade, dry_run=dry_run
        )
    except card.FailedReport as error:
        click.echo(f"porter card: {error}", err=True)
        return 1
    except card.CardError as error:
        click.echo(f"porter card: {error}", err=True)
        return 2
    if as_json:
        payload = result.to_dict()
        if dry_run:
            payload["text"] = text
        click.echo(json.dumps(payload, indent=2))
    elif dry_run:
        click.echo(text, nl=False)
    else:
        _render(result, dry_run)
    return 0
