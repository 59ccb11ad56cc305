"""``porter migrate``: show, apply or copy the port of files and trees."""

from __future__ import annotations

import os
import sys

import click

from porter.discovery import discover
from porter.engine import migrate_file
from porter.options import DEFAULT_LOG_INTERVAL, DEFAULT_MAX_FILE_SIZE, Options
from porter.render import change_line, colour_diff, summary
from porter.results import Failure, FileResult, Success
from porter.textio import SourceError, write_atomic

EXIT_OK, EXIT_CHANGES, EXIT_ERROR = 0, 1, 2


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())


@click.command("migrate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--write", "-w", is_flag=True, help="Apply the port in place (atomic per file).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=str), help="Write ported files into a mirror tree under DIR instead.")
@click.option("--check", is_flag=True, help="Exit 1 when any file would change (for CI); writes nothing unless --write/--out.")
@click.option("--select", multiple=True, metavar="CODES", help="Only these rule codes or prefixes (comma-separated, repeatable): NRN1,NRN203.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rule codes or prefixes.")
@click.option("--style", type=click.Choice(["neuron", "accelerator"]), default="neuron", show_default=True, help="neuron: write the device explicitly; accelerator: device-generic torch.accelerator code.")
@click.option("--all", "all_files", is_flag=True, help="Run the performance rules (NRN4xx-NRN7xx) on every file, not only files being ported.")
@click.option("--log-interval", type=click.IntRange(min=1), default=DEFAULT_LOG_INTERVAL, show_default=True, help="Steps between log lines when host-sync rules introduce an interval.")
@click.option("--no-compile-insertion", is_flag=True, help="Never insert model.compile(backend='neuron') into scripts without a compile.")
@click.option("--max-file-size", type=click.IntRange(min=1), default=DEFAULT_MAX_FILE_SIZE, show_default=True, help="Refuse files larger than this many bytes.")
@click.option("--no-prefilter", is_flag=True, hidden=True, help="Parse every file, even those with no trigger word (for testing).")
@click.option("--diff/--no-diff", "show_diff", default=True, show_default=True, help="Print the unified diff of each changed file.")
@click.option("--quiet", "-q", is_flag=True, help="Print only errors and the summary line.")
@click.option("--color/--no-color", default=None, help="Colour the diff (default: when stdout is a terminal).")
def command(
    paths: tuple[str, ...],
    write: bool,
    out_dir: str | None,
    check: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    style: str,
    all_files: bool,
    log_interval: int,
    no_compile_insertion: bool,
    max_file_size: int,
    no_prefilter: bool,
    show_diff: bool,
    quiet: bool,
    color: bool | None,
) -> int:
    """Port PATHS (files or folders) from CUDA to Neuron.

    By default prints the unified diff of each file the port changes, then one line per change
    (FILE:LINE CODE message; [review] marks changes a human should confirm), and writes nothing.

    \b
    Exit codes:
      0  nothing failed (and, with --check, nothing would change)
      1  --check was given and at least one file would change
      2  at least one file could not be read, parsed or written (the others are still done)
    """
    if write and out_dir:
        raise click.UsageError("--write and --out are exclusive: port in place, or into a mirror tree")
    options = Options(
        select=_codes(select),
        ignore=_codes(ignore),
        style=style,  # type: ignore[arg-type]
        all_files=all_files,
        log_interval=log_interval,
        insert_compile=not no_compile_insertion,
        prefilter=not no_prefilter,
        max_file_size=max_file_size,
    )
    colour = sys.stdout.isatty() if color is None else color
    results: list[FileResult] = []
    for target in discover(list(paths)):
        if target.error:
            result: FileResult = Failure(target.path, target.error, kind="read")
        else:
            result = migrate_file(target.path, options)
        if write and isinstance(result, Success):
            result = _write(result, target.path)
        elif out_dir:
            result = _copy_out(result, target.path, os.path.join(out_dir, target.relative))
        results.append(result)
        _report(result, show_diff and not quiet, quiet, colour)
    verb = "ported" if write or out_dir else "would change"
    if paths:
        click.echo(summary(results, verb), err=True)
    if any(isinstance(result, Failure) for result in results):
        return EXIT_ERROR
    if check and any(isinstance(result, Success) for result in results):
        return EXIT_CHANGES
    return EXIT_OK


def _write(result: Success, path: str) -> FileResult:
    try:
        write_atomic(path, result.new, expected=result.old)
    except SourceError as error:
        return Failure(result.path, str(error), kind="write")
    return result


def _copy_out(result: FileResult, source: str, destination: str) -> FileResult:
    if isinstance(result, Failure):
        return result
    try:
        data = result.new if isinstance(result, Success) else _read(source)
        os.makedirs(os.path.dirname(destination) or ".", exist_ok=True)
        write_atomic(destination, data)
    except (SourceError, OSError) as error:
        return Failure(result.path, f"cannot write {destination}: {error}", kind="write")
    return result


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _report(result: FileResult, show_diff: bool, quiet: bool, colour: bool) -> None:
    if isinstance(result, Failure):
        click.echo(result.line(), err=True)
        return
    if not isinstance(result, Success) or quiet:
        return
    if show_diff:
        diff = result.diff()
        click.echo(colour_diff(diff) if colour else diff, nl=False, color=colour)
    for change in result.changes:
        click.echo(change_line(change))
