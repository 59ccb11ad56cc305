"""``porter migrate``: show, apply or copy the port of files, trees and whole repositories.

Click parsing and terminal rendering only: the pipeline is ``porter.run.migrate`` (the library
call ``porter.api.migrate_paths``), which imports libcst only for files the content cache does
not know (a fully cached run loads neither libcst nor a process pool).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from porter.engine.changes import Change, Safety
from porter.engine.options import DEFAULT_LOG_INTERVAL, DEFAULT_MAX_FILE_SIZE
from porter.engine.results import Failure, FileResult, Success
from porter.reports.markers import MarkerTally
from porter.reports.progress import Progress
from porter.reports.render import change_line, colour_diff, finding_line, findings_of, statistics, summary, verifier_summary
from porter.run.batch import WorkerError
from porter.run.migrate import SETTING_FLAGS, FileOutcome, MigrateError, Migration, options_from_flags, sigterm_as_interrupt

if TYPE_CHECKING:
    from porter.run.sinks.select import Hunk

EXIT_OK, EXIT_CHANGES, EXIT_ERROR, EXIT_VERIFIER, EXIT_INTERRUPTED = 0, 1, 2, 3, 130  # documented in the help below


@click.command("migrate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--write", "-w", "--fix", "write", is_flag=True, help="Apply the port in place (atomic per file); --fix is the same (ruff's spelling).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=str), help="Write a complete, runnable copy under DIR: ported Python and notebooks, every other file copied as it is; with several folders given, one subfolder each. Modes and symbolic links are kept; DIR must not be, or contain, an input.")
@click.option("--safe-only", is_flag=True, help="Apply only `safe` changes; `review` changes are listed as not applied (ruff's safe/unsafe split). A file whose safe changes cannot be applied without a review one is left as it was, with a message.")
@click.option("--interactive", "-i", is_flag=True, help="Show each hunk with its rule codes and safety and ask: [a]ccept, [s]kip, [q]uit (no more changes applied). Reads a terminal; implies --write unless --out, --git-branch or --patch is given.")
@click.option("--check", is_flag=True, help="Exit 1 when any file would change (for CI, pre-commit); writes nothing unless --write/--out. Review markers already present do not count.")
@click.option("--select", multiple=True, metavar="CODES", help="Only these rule codes or prefixes (comma-separated, repeatable): NRN1,NRN203.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rule codes or prefixes.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip files/folders matching GLOB below a root (repeatable; adds to [tool.porter] exclude). A path given explicitly is never excluded.")
@click.option("--style", type=click.Choice(["neuron", "accelerator"]), default="neuron", show_default=True, help="neuron: write the device explicitly; accelerator: device-generic torch.accelerator code.")
@click.option("--all", "all_files", is_flag=True, help="Run the performance rules (NRN4xx-NRN7xx) on every file, not only files being ported.")
@click.option("--log-interval", type=click.IntRange(min=1), default=DEFAULT_LOG_INTERVAL, show_default=True, help="Steps between log lines when host-sync rules introduce an interval.")
@click.option("--no-compile-insertion", is_flag=True, help="Never insert model.compile(backend='neuron') into scripts without a compile.")
@click.option("--max-file-size", type=click.IntRange(min=1), default=DEFAULT_MAX_FILE_SIZE, show_default=True, help="Refuse files larger than this many bytes.")
@click.option("--time-limit", type=click.IntRange(min=0), default=120, show_default=True, metavar="SECONDS", help="A file that takes longer to port fails (left as it was) and the batch goes on; 0: no limit.")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default="0 = all cores", help="Worker processes; -j1 (or a dozen files to parse or fewer) ports in this process.")
@click.option("--patch", "patch_file", type=click.Path(dir_okay=False, path_type=str), help="Write every change as one patch to FILE (paths relative to the git repository holding the inputs, else to their common folder; apply there with `git apply FILE` or `patch -p1 < FILE`).")
@click.option("--report", "reports", multiple=True, type=click.Path(dir_okay=False, allow_dash=True, path_type=str), help="Write a report; the format follows the extension: .json, .sarif, .md (repeatable). `-`: to standard output, in the --output-format (JSON for text).")
@click.option("--output-format", type=click.Choice(["text", "json", "sarif", "github", "markdown"]), default="text", show_default=True, help="What goes to standard output: text (diffs and change lines), a json/sarif/markdown report, or github (GitHub Actions ::warning/::notice commands, one per change).")
@click.option("--git-branch", metavar="NAME", help="Per git repository: create branch NAME, write the port and commit it (message lists the rule codes).")
@click.option("--allow-dirty", is_flag=True, help="With --git-branch: accept uncommitted changes in the work tree.")
@click.option("--python-only", is_flag=True, help="Port only Python files and notebooks; by default a folder is ported whole: requirements, pyproject/setup.cfg pins, conda envs, shell/Slurm launchers, Makefiles, Dockerfiles, configs too. A .py path is always Python-only.")
@click.option("--files", "port_files", is_flag=True, hidden=True, help="Port non-Python files too: the default now (kept for old command lines).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=str), default=None, help="Content cache folder [default: .porter_cache beside the pyproject.toml in use, or here].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the content cache.")
@click.option("--progress/--no-progress", "progress", default=None, help="Progress bar on stderr (default: when stderr is a terminal).")
@click.option("--no-prefilter", is_flag=True, hidden=True, help="Parse every file, even those with no trigger word (for testing).")
@click.option("--diff/--no-diff", "show_diff", default=None, help="Print the unified diff of each changed file [default: only when nothing is written; --write/--out/--git-branch print a summary].")
@click.option("--statistics", is_flag=True, help="After the run, print how many changes each code made (like ruff).")
@click.option("--quiet", "-q", is_flag=True, help="Print only errors and the summary line.")
@click.option("--verbose", "-v", is_flag=True, help="Also print each file that did not change and why (no trigger word, cached, skip-file).")
@click.option("--color/--no-color", default=None, help="Colour the diff (default: when stdout is a terminal).")
@click.pass_context
def command(ctx: click.Context, paths: tuple[str, ...], **flags: object) -> int:
    """Port PATHS (files, folders, repositories; .py, .pyi, .ipynb) from CUDA to Neuron.

    By default prints the unified diff of each file the port changes, then one line per change
    (FILE:LINE CODE message; [review] marks changes a human should confirm), and writes nothing.
    --write (or --out, --git-branch) applies the port and prints a summary instead: the files,
    the changes by code and the review items (--diff prints the diffs too). A folder is ported
    whole: Python, notebooks, dependency pins, launchers and configs (--python-only: not those).
    Inside a git work tree the files are git's (.gitignore is honoured); virtualenvs,
    site-packages, node_modules, build outputs and files marked @generated are skipped.
    Settings come from [tool.porter] in the nearest pyproject.toml; flags override them
    (`porter config` shows the result). Re-runs are served from a content cache.

    \b
    Suppressing a change (--check honours these too):
      x = y.cuda()  # noqa: NRN102      this statement, these codes or prefixes (bare: all)
      # porter: ignore[NRN1,NRN203]     on the line above a statement or block: all of it
      # porter: skip-file               in the first 20 lines: the file is left as it is
      [tool.porter] per-file-ignores = {"tests/*" = ["NRN6"]}

    \b
    Exit codes:
      0  nothing failed (and, with --check, nothing would change)
      1  --check was given and at least one file would change
      3  --check (all rules), nothing would change, but the verifier found what cannot run on Neuron
      2  at least one file could not be read, parsed or written (the others are still done),
         bad usage or configuration, or a --git-branch precondition failed
      130 interrupted (Ctrl-C or SIGTERM): every file is fully old or fully new; a summary is printed
    """
    if not paths:
        raise click.UsageError("no paths given (e.g. `porter migrate .`)")
    if flags["port_files"] and flags["python_only"]:
        raise click.UsageError("--files and --python-only contradict each other (non-Python files are ported by default)")
    if flags["interactive"]:
        if flags["safe_only"]:
            raise click.UsageError("--interactive and --safe-only are exclusive: choose each hunk, or apply the safe ones")
        if not _stdin_is_terminal():
            raise click.UsageError("--interactive asks on a terminal, but standard input is not one (use --safe-only in scripts)")
        if not (flags["out_dir"] or flags["git_branch"] or flags["patch_file"]):
            flags["write"] = True
    fmt = str(flags["output_format"])
    reports = [report for report in flags["reports"] if report != "-"]  # type: ignore[attr-defined]
    if "-" in flags["reports"] and fmt == "text":  # type: ignore[operator]
        fmt = "json"  # standard output carries the report alone
    quiet = bool(flags["quiet"])
    writes = bool(flags["write"] or flags["out_dir"] or flags["git_branch"])
    show_diff = (not writes if flags["show_diff"] is None else bool(flags["show_diff"])) and fmt == "text"
    stdout_report = fmt if fmt in ("json", "sarif", "markdown") else None
    progress = Progress.create(False if flags["interactive"] else flags["progress"], quiet)
    given = {name for name in SETTING_FLAGS if ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)}
    chooser = _Asker(progress) if flags["interactive"] else None
    try:
        options = options_from_flags(paths, {**flags, "show_diff": show_diff, "reports": tuple(reports)}, given)
        options = replace(options, stdout_report=stdout_report)
        migration = Migration(options, lambda line: progress.echo(line, err=True), progress.start, chooser)
    except MigrateError as error:
        raise click.UsageError(str(error)) from None
    colour = sys.stdout.isatty() if flags["color"] is None else bool(flags["color"])
    printer = _Printer(progress, fmt, quiet, bool(flags["verbose"]), colour, writes)
    results: list[FileResult] = []
    markers = MarkerTally()  # every marker of the output, counted before the bytes are dropped
    interrupted = False
    outcomes = migration.__iter__()  # a generator: closed on every way out
    try:
        with sigterm_as_interrupt():  # SIGTERM ends a batch like Ctrl-C: between files, with a summary
            for outcome in outcomes:
                progress.advance(outcome.result, outcome.relative)
                printer.file(outcome)
                result = outcome.result  # kept without its bytes: thousands of files must not pile up
                markers.add(result)
                results.append(replace(result, old=b"", new=b"") if isinstance(result, Success) else result)
    except KeyboardInterrupt:
        interrupted = True  # every write is a rename of a complete file: each is fully old or new
    except WorkerError as error:  # the process pool cannot start: nothing was ported
        click.echo(f"porter: error: {error}", err=True)
        return EXIT_ERROR
    finally:
        outcomes.close()
        progress.stop()
    line = summary(results, "ported" if writes else "would change")
    if interrupted:
        click.echo(f"porter: interrupted after {len(results)} of {migration.total} files; {line} "
                   "Every file is either as it was or fully ported; run again to finish.", err=True)
        return EXIT_INTERRUPTED
    for folder in migration.empty:
        click.echo(f"porter: nothing portable found under {folder}", err=True)
    for text in migration.outputs.stdout:
        click.echo(text, nl=not text.endswith("\n"))
    printer.finish(results, bool(flags["statistics"]))
    if migration.stats.cache_hits:
        line = line[:-1] + f" ({migration.stats.cache_hits} from cache)."
    if printer.not_applied:
        line = line[:-1] + f"; {printer.not_applied} change{'s' if printer.not_applied != 1 else ''} not applied."
    click.echo(f"{line} {verifier_summary(results, markers)}", err=True)
    if any(isinstance(result, Failure) for result in results) or migration.outputs.failed:
        return EXIT_ERROR
    if flags["check"] and any(isinstance(result, Success) for result in results):
        return EXIT_CHANGES
    narrowed = flags["select"] or flags["ignore"]  # the verifier speaks for the whole rule set only
    return EXIT_VERIFIER if flags["check"] and not narrowed and findings_of(results) else EXIT_OK


def _stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


class _Printer:
    """What ``migrate`` prints per file and at the end, by output format and mode."""

    def __init__(self, progress: Progress, fmt: str, quiet: bool, verbose: bool, colour: bool, writes: bool) -> None:
        self.progress, self.fmt, self.quiet, self.verbose, self.colour, self.writes = progress, fmt, quiet, verbose, colour, writes
        self.review: list[str] = []
        self.not_applied = 0

    def file(self, outcome: FileOutcome) -> None:
        result, echo = outcome.result, self.progress.echo
        self.not_applied += len(outcome.skipped)
        if outcome.refused:
            echo(f"{outcome.path}: left as it was: {outcome.refused}", err=True)
        if isinstance(result, Failure):
            echo(result.line(), err=True)
            if self.fmt == "github":
                echo(github_command("error", result.path, None, f"porter: {result.reason}"))
            return
        if self.fmt == "github":
            for change in getattr(result, "changes", ()):
                echo(github_command("warning", change.path, change.line, f"{change.code} {change.message}" + _tag(change)))
            for change in outcome.skipped:
                echo(github_command("warning", change.path, change.line, f"{change.code} {change.message} (not applied)"))
            for finding in getattr(result, "findings", ()):
                echo(github_command("warning", finding.path, finding.line, f"verify/{finding.kind.value} {finding.message}"))
            return
        if self.quiet or self.fmt != "text":
            return
        changes = result.changes if isinstance(result, Success) else ()
        skipped = [f"{change_line(change)} (not applied)" for change in outcome.skipped]
        if self.verbose and not changes and not skipped:
            reason = getattr(result, "skipped", None) or "nothing to port"
            echo(f"{outcome.path}: unchanged ({reason}{', cached' if outcome.cached else ''})")
        if outcome.diff:
            echo(colour_diff(outcome.diff) if self.colour else outcome.diff, nl=False, color=self.colour)
        findings = [finding_line(finding) for finding in getattr(result, "findings", ())]
        if self.writes and not outcome.diff:  # a summary: one line per file, the review items at the end
            if changes:
                review = sum(1 for change in changes if change.safety is Safety.REVIEW)
                echo(f"{outcome.path}: {len(changes)} change{'s' if len(changes) != 1 else ''}" + (f", {review} to review" if review else ""))
            self.review += [self._paint(change_line(c)) for c in changes if c.safety is Safety.REVIEW] + skipped + findings
            return
        for line in [*map(change_line, changes), *skipped, *findings]:
            echo(self._paint(line), color=self.colour)

    def _paint(self, line: str) -> str:
        return click.style(line, fg="yellow") if self.colour and "[review]" in line else line

    def finish(self, results: list[FileResult], show_statistics: bool) -> None:
        if self.fmt != "text":
            return
        changed = any(isinstance(result, Success) for result in results)
        if self.writes and not self.quiet and changed:  # the code summaries load the rules: only when shown
            click.echo("\nChanges by code:\n" + "\n".join(statistics(results)))
        elif show_statistics:
            click.echo("\n".join(statistics(results)) or "no changes")
        if self.review and not self.quiet:
            click.echo("\nTo review:\n" + "\n".join(self.review), color=self.colour)


def _tag(change: Change) -> str:
    return " [review]" if change.safety is Safety.REVIEW else ""


def github_command(level: str, path: str, line: int | None, message: str) -> str:
    """A GitHub Actions workflow command (``::warning file=F,line=L::message``), escaped as the
    runner expects (``%``, CR, LF in the message; also ``:`` and ``,`` in properties)."""

    def data(text: str) -> str:
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    def prop(text: str) -> str:
        return data(text).replace(":", "%3A").replace(",", "%2C")

    where = f" file={prop(path.replace(os.sep, '/'))}" + (f",line={line}" if line else "")
    return f"::{level}{where}::{data(message)}"


class _Asker:
    """``--interactive``: each hunk with its codes and safety; [a]ccept, [s]kip, [q]uit."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.quit = False

    def __call__(self, path: str, hunks: Sequence[Hunk]) -> list[bool] | None:
        if self.quit:
            return None
        kept: list[bool] = []
        for number, hunk in enumerate(hunks, 1):
            click.echo(f"\n{path} hunk {number}/{len(hunks)}: {', '.join(hunk.codes)} [{hunk.safety.value}]")
            for change in hunk.changes:
                click.echo(f"  {change_line(change)}")
            click.echo(colour_diff(hunk.text()) if sys.stdout.isatty() else hunk.text(), nl=False)
            answer = click.prompt("Apply this hunk? [a]ccept, [s]kip, [q]uit", type=click.Choice(["a", "s", "q"]), show_choices=False)
            if answer == "q":
                self.quit = True
                return None
            kept.append(answer == "a")
        return kept
