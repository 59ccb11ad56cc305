"""``porter migrate``: show, apply or copy the port of files, trees and whole repositories.

The engine (and with it libcst) is imported lazily, by the batch runner, only for files the
content cache does not know: a fully cached run loads neither libcst nor a process pool.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import click
from click.core import ParameterSource

from porter.run.config import Config, ConfigError, load_config, to_options_fields
from porter.run.discovery import PORTED_SUFFIXES, Target, discover, git_toplevel, tree_files
from porter.engine.options import DEFAULT_LOG_INTERVAL, DEFAULT_MAX_FILE_SIZE, Options
from porter.reports.render import change_line, colour_diff, summary
from porter.engine.results import Failure, FileResult, Success
from porter.engine.textio import SourceError, write_atomic

EXIT_OK, EXIT_CHANGES, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
REPORT_SUFFIXES = (".json", ".sarif", ".md", ".markdown")

# CLI parameter -> [tool.porter] key it overrides (when given on the command line).
_OVERRIDES = {
    "select": "select",
    "ignore": "ignore",
    "style": "style",
    "all_files": "all",
    "log_interval": "log-interval",
    "max_file_size": "max-file-size",
    "jobs": "jobs",
    "time_limit": "time-limit",
    "cache_dir": "cache-dir",
}


def _raise_interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends a batch like Ctrl-C: between files, with a summary."""
    raise KeyboardInterrupt


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())


@click.command("migrate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--write", "-w", is_flag=True, help="Apply the port in place (atomic per file).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=str), help="Write a complete, runnable copy under DIR: ported Python and notebooks, every other file copied as it is; with several folders given, one subfolder each.")
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
@click.option("--patch", "patch_file", type=click.Path(dir_okay=False, path_type=str), help="Write every change as one patch to FILE (paths relative to the current folder; apply with `git apply FILE`).")
@click.option("--report", "reports", multiple=True, type=click.Path(dir_okay=False, path_type=str), help="Write a report; the format follows the extension: .json, .sarif, .md (repeatable).")
@click.option("--git-branch", metavar="NAME", help="Per git repository: create branch NAME, write the port and commit it (message lists the rule codes).")
@click.option("--allow-dirty", is_flag=True, help="With --git-branch: accept uncommitted changes in the work tree.")
@click.option("--files", "port_files", is_flag=True, help="Also port non-Python files: requirements, pyproject/setup.cfg pins, conda envs, shell/Slurm launchers, Makefiles, Dockerfiles, configs.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=str), default=None, help="Content cache folder [default: .porter_cache beside the pyproject.toml in use, or here].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the content cache.")
@click.option("--progress/--no-progress", "progress", default=None, help="Progress bar on stderr (default: when stderr is a terminal).")
@click.option("--no-prefilter", is_flag=True, hidden=True, help="Parse every file, even those with no trigger word (for testing).")
@click.option("--diff/--no-diff", "show_diff", default=True, show_default=True, help="Print the unified diff of each changed file.")
@click.option("--quiet", "-q", is_flag=True, help="Print only errors and the summary line.")
@click.option("--color/--no-color", default=None, help="Colour the diff (default: when stdout is a terminal).")
@click.pass_context
def command(ctx: click.Context, paths: tuple[str, ...], **flags: object) -> int:
    """Port PATHS (files, folders, repositories; .py, .pyi, .ipynb) from CUDA to Neuron.

    By default prints the unified diff of each file the port changes, then one line per change
    (FILE:LINE CODE message; [review] marks changes a human should confirm), and writes nothing.
    Inside a git work tree the files are git's (.gitignore is honoured); virtualenvs,
    site-packages, node_modules, build outputs and files marked @generated are skipped.
    Settings come from [tool.porter] in the nearest pyproject.toml; flags override them
    (`porter config` shows the result). Re-runs are served from a content cache.

    \b
    Exit codes:
      0  nothing failed (and, with --check, nothing would change); also when no file is given
      1  --check was given and at least one file would change
      2  at least one file could not be read, parsed or written (the others are still done),
         bad usage or configuration, or a --git-branch precondition failed
      130 interrupted (Ctrl-C or SIGTERM): every file is fully old or fully new; a summary is printed
    """
    run = _Run.from_flags(ctx, paths, flags)
    return run.execute()


@dataclass
class _Root:
    """One PATHS argument: its configuration, options and where its files go."""

    path: str
    config: Config
    options: Options
    exclude: tuple[str, ...]
    repo: str  # git top folder, or the folder itself (a file's folder)
    out: str | None = None


@dataclass
class _Run:
    paths: tuple[str, ...]
    flags: dict[str, object]
    roots: dict[str, _Root]
    config: Config
    jobs: int
    colour: bool
    show_diff: bool
    quiet: bool
    results: list[FileResult] = field(default_factory=list)
    failed_outputs: list[str] = field(default_factory=list)
    copied: set[str] = field(default_factory=set)  # sources already written under --out

    @classmethod
    def from_flags(cls, ctx: click.Context, paths: tuple[str, ...], flags: dict[str, object]) -> _Run:
        if flags["write"] and flags["out_dir"]:
            raise click.UsageError("--write and --out are exclusive: port in place, or into a mirror tree")
        if flags["git_branch"] and flags["out_dir"]:
            raise click.UsageError("--git-branch commits the port in place; it cannot be combined with --out")
        if flags["allow_dirty"] and not flags["git_branch"]:
            raise click.UsageError("--allow-dirty only applies with --git-branch")
        for report in flags["reports"]:  # type: ignore[attr-defined]
            if not str(report).lower().endswith(REPORT_SUFFIXES):
                raise click.UsageError(f"--report {report}: unknown format (use .json, .sarif or .md)")
        overrides = _overrides(ctx, flags)
        try:
            first = load_config(paths[0] if paths else None).with_overrides(overrides)
            roots = {raw: _root(raw, overrides, flags) for raw in dict.fromkeys(paths)}
        except ConfigError as error:
            raise click.UsageError(str(error)) from None
        if flags["out_dir"]:
            _assign_out(list(roots.values()), str(flags["out_dir"]))
        from porter.run.config import effective_jobs

        colour = sys.stdout.isatty() if flags["color"] is None else bool(flags["color"])
        return cls(
            paths=paths,
            flags=flags,
            roots=roots,
            config=first,
            jobs=effective_jobs(int(first["jobs"])),
            colour=colour,
            show_diff=bool(flags["show_diff"]) and not flags["quiet"],
            quiet=bool(flags["quiet"]),
        )

    # ------------------------------------------------------------------ the run
    def execute(self) -> int:
        if not self.paths:
            return EXIT_OK
        branch = self.flags["git_branch"]
        repos = self._check_git(str(branch)) if branch else []
        owned = self._targets()
        targets = [target for target, _ in owned]
        owners = [self.roots[raw] for _, raw in owned]
        write_now = bool(self.flags["write"])
        from porter.run.batch import Stats, WorkerError, run_batch
        from porter.reports.json_report import RunRecord

        record = RunRecord(command=["porter", "migrate", *self.paths])
        record.options = {key: value for key, value in self.config.values.items() if key != "cache-dir"}
        stats = Stats()
        cache = self._cache()
        patch: list[str] = []
        pending_commits: dict[str, list[Success]] = {}
        progress = _Progress.create(self.flags["progress"], self.quiet)
        interrupted = False
        previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            options = [root.options for root in owners]
            for index, result, _cached in run_batch(targets, options, self.jobs, cache, stats, progress.start):
                target = targets[index]
                root = owners[index]
                if isinstance(result, Success):
                    if branch:
                        pending_commits.setdefault(root.repo, []).append(result)
                    elif write_now:
                        result = _write(result, target.path)
                if root.out is not None:
                    result = _copy_out(result, target.path, os.path.join(root.out, target.relative))
                    if not isinstance(result, Failure) or result.kind == "parse":
                        self.copied.add(os.path.abspath(target.path))
                if isinstance(result, Success) and self.flags["patch_file"]:
                    patch.append(result.diff(_patch_path(target.path)))
                record.add(result, root.repo)
                progress.advance(result)
                self._print(result, progress)
                # Keep counts, not bytes: a tree of thousands of files must not pile up in memory.
                self.results.append(replace(result, old=b"", new=b"") if isinstance(result, Success) else result)
        except WorkerError as error:  # the pool cannot start: nothing was ported
            click.echo(f"porter: error: {error}", err=True)
            return EXIT_ERROR
        except KeyboardInterrupt:
            # Every write is a rename of a complete temporary file: each file is fully old or fully new.
            interrupted = True
        finally:
            signal.signal(signal.SIGTERM, previous_term)
            progress.stop()
            if cache is not None:
                cache.close()
                if cache.warning:
                    click.echo(f"porter: warning: {cache.warning}", err=True)
        if interrupted:
            done = len(self.results)
            click.echo(
                f"porter: interrupted after {done} of {len(targets)} files; "
                f"{summary(self.results, 'ported' if write_now or self.flags['out_dir'] else 'would change')} "
                "Every file is either as it was or fully ported; run again to finish.",
                err=True,
            )
            return EXIT_INTERRUPTED
        record.cache_hits = stats.cache_hits
        if self.flags["out_dir"]:
            self._copy_rest()
        if branch:
            self._commit(str(branch), repos, pending_commits)
        if self.flags["patch_file"]:
            self._write_text(str(self.flags["patch_file"]), "".join(patch))
        for report in self.flags["reports"]:  # type: ignore[attr-defined]
            self._write_text(report, _render_report(report, record))
        verb = "ported" if write_now or self.flags["out_dir"] or branch else "would change"
        line = summary(self.results, verb)
        if stats.cache_hits:
            line = line[:-1] + f" ({stats.cache_hits} from cache)."
        click.echo(line, err=True)
        if any(isinstance(result, Failure) for result in self.results) or self.failed_outputs:
            return EXIT_ERROR
        if self.flags["check"] and any(isinstance(result, Success) for result in self.results):
            return EXIT_CHANGES
        return EXIT_OK

    def _targets(self) -> list[tuple[Target, str]]:
        """Every file to port, with the PATHS argument it came from."""
        out = os.path.abspath(str(self.flags["out_dir"])) if self.flags["out_dir"] else None
        targets: list[tuple[Target, str]] = []
        accept = None
        if self.flags["port_files"]:
            from porter.filetypes import handles as accept  # loads libcst (setup.py ports): opt-in
        for raw, root in self.roots.items():
            for target in discover([raw], PORTED_SUFFIXES, root.exclude, use_git=True, accept=accept):
                if out is not None and not target.explicit and _inside(os.path.abspath(target.path), out):
                    continue  # never port the output of an earlier run into itself
                targets.append((target, raw))
        return targets

    def _cache(self):  # type: ignore[no-untyped-def]
        if self.flags["no_cache"] or not self.config["cache"]:
            return None
        from porter.run.cache import Cache

        return Cache(self.config.cache_dir)

    def _print(self, result: FileResult, progress: _Progress) -> None:
        if isinstance(result, Failure):
            progress.echo(result.line(), err=True)
            return
        if not isinstance(result, Success) or self.quiet:
            return
        if self.show_diff:
            diff = result.diff()
            progress.echo(colour_diff(diff) if self.colour else diff, nl=False, color=self.colour)
        for change in result.changes:
            progress.echo(change_line(change))

    # ------------------------------------------------------------------ outputs
    def _copy_rest(self) -> None:
        """Copy the files that are not ported (data, configs, excluded code) so the copy runs."""
        import shutil

        ported = self.copied
        out_abs = os.path.abspath(str(self.flags["out_dir"]))
        for root in self.roots.values():
            if root.out is None or not os.path.isdir(root.path):
                continue
            for relative in tree_files(root.path):
                source = os.path.join(root.path, relative)
                absolute = os.path.abspath(source)
                if absolute in ported or _inside(absolute, out_abs):
                    continue
                destination = os.path.join(root.out, relative)
                try:
                    if _same_file_copy(source, destination):
                        continue
                    os.makedirs(os.path.dirname(destination) or ".", exist_ok=True)
                    shutil.copy2(source, destination)
                except OSError as error:
                    self.failed_outputs.append(destination)
                    click.echo(f"{source}: error: cannot copy to {destination}: {error.strerror or error}", err=True)

    def _write_text(self, path: str, text: str) -> None:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            write_atomic(path, text.encode("utf-8"))
        except (SourceError, OSError) as error:
            self.failed_outputs.append(path)
            click.echo(f"{path}: error: cannot write: {error}", err=True)

    def _check_git(self, branch: str) -> list[str]:
        from porter.run.gitops import GitError, check_ready

        repos = sorted({root.repo for root in self.roots.values()})
        for root in self.roots.values():
            if git_toplevel(root.path) is None:
                raise click.UsageError(f"--git-branch: {root.path} is not inside a git work tree")
        for repo in repos:
            try:
                check_ready(repo, branch, bool(self.flags["allow_dirty"]))
            except GitError as error:
                raise click.UsageError(str(error)) from None
        return repos

    def _commit(self, branch: str, repos: Sequence[str], pending: dict[str, list[Success]]) -> None:
        from porter.run.gitops import GitError, commit, commit_message, create_branch

        summaries = _code_summaries()
        for repo in repos:
            successes = pending.get(repo, [])
            if not successes:
                click.echo(f"{repo}: nothing to port; no branch created", err=True)
                continue
            try:
                create_branch(repo, branch)
            except GitError as error:
                self.failed_outputs.append(repo)
                click.echo(f"porter: error: {error}", err=True)
                continue
            written: list[str] = []
            for success in successes:
                result = _write(success, success.path)
                if isinstance(result, Failure):
                    self.failed_outputs.append(success.path)
                    click.echo(result.line(), err=True)
                else:
                    written.append(os.path.relpath(os.path.abspath(success.path), repo))
            if not written:
                continue
            changes = [change for success in successes for change in success.changes]
            try:
                sha = commit(repo, written, commit_message(changes, len(written), summaries))
            except GitError as error:
                self.failed_outputs.append(repo)
                click.echo(f"porter: error: {error}", err=True)
                continue
            click.echo(f"{repo}: committed the port on branch {branch} ({sha[:12]}, {len(written)} files)", err=True)


def _overrides(ctx: click.Context, flags: dict[str, object]) -> dict[str, object]:
    """The flags the user actually gave, as [tool.porter] keys (they override the file)."""
    given: dict[str, object] = {}
    for param, key in _OVERRIDES.items():
        if ctx.get_parameter_source(param) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            value = flags[param]
            given[key] = list(_codes(value)) if param in ("select", "ignore") else value  # type: ignore[arg-type]
    if flags["no_compile_insertion"]:
        given["compile-insertion"] = False
    if flags["no_cache"]:
        given["cache"] = False
    return given


def _root(raw: str, overrides: dict[str, object], flags: dict[str, object]) -> _Root:
    config = load_config(raw).with_overrides(overrides)
    fields = to_options_fields(config)
    options = Options(prefilter=not flags["no_prefilter"], **fields)  # type: ignore[arg-type]
    exclude = tuple(config["exclude"]) + tuple(flags["exclude"])  # type: ignore[arg-type]
    normalized = os.path.normpath(raw)
    folder = normalized if os.path.isdir(normalized) else (os.path.dirname(normalized) or ".")
    repo = git_toplevel(folder) if os.path.exists(folder) else None
    return _Root(normalized, config, options, exclude, os.path.abspath(repo or folder))


def _assign_out(roots: list[_Root], out_dir: str) -> None:
    folders = [root for root in roots if os.path.isdir(root.path)]
    for root in roots:
        if root not in folders:
            root.out = out_dir  # a file lands at DIR/<its name>
        elif len(folders) == 1:
            root.out = out_dir
        else:
            root.out = os.path.join(out_dir, os.path.basename(os.path.abspath(root.path)))
    names = [root.out for root in folders]
    if len(folders) > 1 and len(set(names)) != len(names):
        raise click.UsageError("--out: two folders given have the same name; port them in separate runs")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _same_file_copy(source: str, destination: str) -> bool:
    try:
        a, b = os.stat(source), os.stat(destination)
    except OSError:
        return False
    # copy2 keeps the modification time to the nanosecond: same size and time means same copy
    return a.st_size == b.st_size and a.st_mtime_ns == b.st_mtime_ns


def _patch_path(path: str) -> str:
    relative = os.path.relpath(os.path.abspath(path))
    return relative.replace(os.sep, "/")


def _render_report(path: str, record: object) -> str:
    lowered = path.lower()
    if lowered.endswith(".json"):
        from porter.reports.json_report import render
    elif lowered.endswith(".sarif") or lowered.endswith(".sarif.json"):
        from porter.reports.sarif import render
    elif lowered.endswith((".md", ".markdown")):
        from porter.reports.markdown import render
    else:  # validated up front; kept as a guard
        raise click.UsageError(f"--report {path}: unknown format (use .json, .sarif or .md)")
    return render(record)  # type: ignore[arg-type]


def _code_summaries() -> dict[str, str]:
    from porter.engine.registry import all_rules

    found: dict[str, str] = {}
    for rule in all_rules():
        found[rule.code] = rule.summary
        found.update(rule.extra_codes)
    return found


def _write(result: Success, path: str) -> FileResult:
    try:
        write_atomic(path, result.new, expected=result.old)
    except SourceError as error:
        return Failure(result.path, str(error), kind="write")
    return result


def _copy_out(result: FileResult, source: str, destination: str) -> FileResult:
    if isinstance(result, Failure) and result.kind != "parse":
        return result
    try:
        data = result.new if isinstance(result, Success) else _read(source)
        if _holds(destination, data):
            return result
        os.makedirs(os.path.dirname(destination) or ".", exist_ok=True)
        write_atomic(destination, data)
    except (SourceError, OSError) as error:
        return Failure(result.path, f"cannot write {destination}: {error}", kind="write")
    return result


def _holds(path: str, data: bytes) -> bool:
    """Whether ``path`` already holds exactly ``data`` (a re-run then writes nothing)."""
    try:
        if os.path.getsize(path) != len(data):
            return False
        with open(path, "rb") as handle:
            return handle.read() == data
    except OSError:
        return False


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


class _Progress:
    """A rich progress bar on a terminal (stderr); nothing otherwise. Output goes around it."""

    def __init__(self, bar: object | None) -> None:
        self.bar = bar
        self.task: object | None = None
        self.changed = self.failed = 0

    @classmethod
    def create(cls, wanted: object, quiet: bool) -> _Progress:
        show = sys.stderr.isatty() if wanted is None else bool(wanted)
        if not show:
            return cls(None)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("porting"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[changed]} changed, {task.fields[failed]} failed"),
            TextColumn("{task.fields[rate]} files/s"),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        return cls(bar)

    def start(self, total: int) -> None:
        if self.bar is None:
            return
        import time

        self.started = time.perf_counter()
        self.bar.start()  # type: ignore[attr-defined]
        self.task = self.bar.add_task("port", total=total, changed=0, failed=0, rate="-")  # type: ignore[attr-defined]

    def advance(self, result: FileResult) -> None:
        if self.bar is None or self.task is None:
            return
        import time

        self.changed += isinstance(result, Success)
        self.failed += isinstance(result, Failure)
        done = self.bar.tasks[0].completed + 1  # type: ignore[attr-defined]
        rate = done / max(time.perf_counter() - self.started, 1e-6)
        self.bar.update(self.task, advance=1, changed=self.changed, failed=self.failed, rate=f"{rate:.1f}" if rate < 10 else f"{rate:.0f}")  # type: ignore[attr-defined]

    def echo(self, text: str, nl: bool = True, err: bool = False, color: bool | None = None) -> None:
        stream = sys.stderr if err else sys.stdout
        if self.bar is None or not stream.isatty():
            click.echo(text, nl=nl, err=err, color=color)
            return
        # Same terminal as the bar: print through rich, which keeps the bar below the text.
        from rich.text import Text

        body = text[:-1] if not nl and text.endswith("\n") else text
        self.bar.console.print(Text.from_ansi(body), soft_wrap=True)  # type: ignore[attr-defined]

    def stop(self) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.stop()  # type: ignore[attr-defined]
