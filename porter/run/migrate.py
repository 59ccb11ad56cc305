"""``migrate`` as a library call: ``migrate_paths(MigrateOptions(...))`` yields one
``FileOutcome`` per file, in a stable order, while the results flow into the output sinks the
options ask for (``porter.run.sinks``: in place, mirror tree, patch, git branch, reports).

The pipeline, once per run: validate the options, load each input's configuration (once), check
the git repositories (``--git-branch``), discover the files, then stream them through
``run_batch`` (each file read, ``@generated``-checked and hashed once; the content cache
consulted) and the sinks, file by file. After the last file each sink finishes (the rest of the
mirror copied, the commits, the patch, the reports). A consumer that stops early (Ctrl-C) closes
the generator: the cache is closed and no sink finishes. The engine is imported only for files
the cache does not know. The ``porter migrate`` command only parses flags and renders outcomes.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from collections.abc import Callable, Container, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from porter.engine.changes import Change
from porter.engine.options import TARGETS_NEURON, Options
from porter.engine.results import FileResult, Success
from porter.run.config import (
    Config,
    ConfigError,
    codes,
    effective_jobs,
    ignored_for,
    load_config,
    per_file_ignores,
    to_options_fields,
)
from porter.run.discovery import PORTED_SUFFIXES, Target, discover, git_toplevel
from porter.run.sinks import Item, Outputs, Sink, diff_label
from porter.run.sinks.mirror import inside
from porter.run.sinks.reports import REPORT_SUFFIXES

if TYPE_CHECKING:
    from porter.run.cache import Cache
    from porter.run.sinks.select import Chooser, Hunk

# Picks the hunks of one file's port to apply (``--interactive``): (file, hunks) -> kept, or None.
FileChooser = Callable[[str, "Sequence[Hunk]"], "list[bool] | None"]


class MigrateError(Exception):
    """Bad options or configuration, or a ``--git-branch`` precondition: nothing was done."""


@dataclass(frozen=True)
class MigrateOptions:
    """What to port and where the results go. ``None`` settings keep the ``[tool.porter]`` value."""

    paths: tuple[str, ...] = ()
    write: bool = False  # replace each ported file in place
    out_dir: str | None = None  # write a complete, runnable copy below this folder
    git_branch: str | None = None  # per repository: a branch with the port committed
    allow_dirty: bool = False
    patch_file: str | None = None
    reports: tuple[str, ...] = ()  # .json, .sarif, .md
    stdout_report: str | None = None  # json, sarif or markdown: that report, in ``Outputs.stdout``
    python_only: bool = False  # folders: port only Python and notebooks, not pins/launchers/configs
    safe_only: bool = False  # apply only ``safe`` changes; ``review`` ones are listed (FileOutcome.skipped)
    exclude: tuple[str, ...] = ()  # globs, added to [tool.porter] exclude
    prefilter: bool = True
    diffs: bool = True  # compute FileOutcome.diff for changed files
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    style: str | None = None
    all_files: bool | None = None
    log_interval: int | None = None
    compile_insertion: bool | None = None
    max_file_size: int | None = None
    jobs: int | None = None
    time_limit: int | None = None
    cache_dir: str | None = None
    cache: bool | None = None

    def overrides(self) -> dict[str, object]:
        """The settings given, as ``[tool.porter]`` keys (they win over the file)."""
        given = {
            "select": None if self.select is None else list(self.select),
            "ignore": None if self.ignore is None else list(self.ignore),
            "style": self.style,
            "all": self.all_files,
            "log-interval": self.log_interval,
            "compile-insertion": self.compile_insertion,
            "max-file-size": self.max_file_size,
            "jobs": self.jobs,
            "time-limit": self.time_limit,
            "cache-dir": self.cache_dir,
            "cache": self.cache,
        }
        return {key: value for key, value in given.items() if value is not None}


# ``porter migrate``'s flags that are [tool.porter] settings (they win only when given) and those
# passed as they are (same name and type).
SETTING_FLAGS = ("select", "ignore", "style", "all_files", "log_interval", "max_file_size", "jobs", "time_limit", "cache_dir")
DIRECT_FLAGS = ("write", "out_dir", "git_branch", "allow_dirty", "patch_file", "python_only", "safe_only")


def options_from_flags(paths: tuple[str, ...], flags: Mapping[str, Any], given: Container[str]) -> MigrateOptions:
    """``porter migrate``'s flags as options; a [tool.porter] setting counts only when ``given``."""
    chosen: dict[str, Any] = {name: flags[name] for name in DIRECT_FLAGS}
    for name in SETTING_FLAGS:
        if name in given:
            value = flags[name]
            chosen[name] = codes(value) if isinstance(value, tuple) else value  # select, ignore
    return MigrateOptions(
        paths=paths,
        reports=tuple(flags["reports"]),
        exclude=tuple(flags["exclude"]),
        prefilter=not flags["no_prefilter"],
        diffs=bool(flags["show_diff"]) and not flags["quiet"],
        compile_insertion=False if flags["no_compile_insertion"] else None,
        cache=False if flags["no_cache"] else None,
        **chosen,
    )


@dataclass(frozen=True)
class FileOutcome:
    """One file's result after every sink saw it (a failed write is a ``Failure``)."""

    path: str
    relative: str
    root: str
    repo: str
    result: FileResult
    cached: bool = False
    diff: str = ""  # the unified diff of a changed file, labelled with its path (``diffs``)
    skipped: tuple[Change, ...] = ()  # changes of the port not applied (--safe-only, --interactive)
    refused: str | None = None  # why none of the port could be applied partly (the file is left as it was)


@dataclass
class _Root:
    path: str
    config: Config
    options: Options
    exclude: tuple[str, ...]
    ignores: tuple[tuple[str, tuple[str, ...]], ...]  # per-file-ignores: (glob, codes)
    repo: str  # git top folder, or the folder itself (a file's folder)
    git: str | None  # the git top folder, if any
    out: str | None = None


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr)


class Migration:
    """A prepared run (options checked, configuration loaded, git checked): iterate it for the
    outcomes; ``total``, ``stats`` and ``outputs.failed`` tell the rest. ``say`` receives the
    lines that are not a file's result (cache warnings, commits, outputs that failed).
    ``choose`` picks the hunks of each changed file to apply (``--interactive``)."""

    def __init__(
        self,
        options: MigrateOptions,
        say: Callable[[str], None] = _to_stderr,
        on_start: Callable[[int], None] | None = None,
        choose: FileChooser | None = None,
    ) -> None:
        from porter.run.batch import Stats

        self.options = options
        self.choose = choose
        self.say = say
        self.on_start = on_start
        self.total = 0
        self.stats = Stats()
        self.outputs = Outputs(self.say)
        self.roots = _prepare(self.options)
        first = next(iter(self.roots.values()), None)
        self.config = first.config if first else load_config(None).with_overrides(self.options.overrides())
        self.jobs = effective_jobs(int(self.config["jobs"]))
        self.repos = _check_git(self.options, self.roots)
        self.empty: list[str] = []  # folders given that hold nothing porter ports (after a run)

    def __iter__(self) -> Generator[FileOutcome, None, None]:
        from porter.run.batch import run_batch

        owned = self._targets()
        self.total = len(owned)
        targets = [target for target, _ in owned]
        sinks = self._sinks()
        cache = self._cache()
        want_diff = self.options.diffs or self.options.patch_file is not None
        writes = bool(self.options.write or self.options.out_dir or self.options.git_branch)
        projects = _Projects()
        in_port = _projects_in_port(owned, projects)
        options = [_file_options(target, root, projects.of(target, root) in in_port) for target, root in owned]
        batch = run_batch(targets, options, self.jobs, cache, self.stats, self.on_start, writes)
        try:
            for index, result, cached in batch:
                target, root = owned[index]
                skipped: tuple[Change, ...] = ()
                refused = None
                if isinstance(result, Success) and (self.options.safe_only or self.choose is not None):
                    result, skipped, refused = self._select(target, result, options[index])
                item = Item(target.path, target.relative, root.path, root.repo, root.out, skipped)
                diff = result.diff(diff_label(target.path)) if want_diff and isinstance(result, Success) else ""
                for sink in sinks:
                    result = sink.accept(item, result, diff)
                yield FileOutcome(target.path, target.relative, root.path, root.repo, result, cached, diff, skipped, refused)
        finally:
            batch.close()  # stops a pool at once when the consumer stops early
            if cache is not None:
                cache.close()
                if cache.warning:
                    self.say(f"porter: warning: {cache.warning}")
        for sink in sinks:
            try:
                sink.finish()
            except Exception as error:  # sources may be written already: report, never crash
                self.outputs.fail(type(sink).__name__, f"porter: error: {type(sink).__name__} output failed: {type(error).__name__}: {error}")

    def _select(self, target: Target, result: Success, options: Options) -> tuple[FileResult, tuple[Change, ...], str | None]:
        """The part of ``result`` to apply (``--safe-only``, ``--interactive``), what was skipped and
        why nothing could be applied, if so (``porter.run.sinks.select``)."""
        from porter.engine.changes import Safety
        from porter.engine.core import verify_output
        from porter.run.batch import port_bytes
        from porter.run.local_imports import with_local_imports
        from porter.run.sinks.select import select

        choose = self.choose
        keep: Chooser = (
            (lambda hunks: choose(target.path, hunks))
            if choose is not None
            else (lambda hunks: [hunk.safety is Safety.SAFE for hunk in hunks])
        )
        verify = (lambda data: verify_output(result.old, data, result.path, options)) if target.kind == "py" else None
        def port(data: bytes) -> FileResult:
            kept = with_local_imports(options, result.path, data) if target.kind == "py" else options
            return port_bytes(data, result.path, target.kind, kept)

        chosen = select(result, keep, port, target.kind, verify)
        refused = chosen.refused
        if refused is None and choose is None and not isinstance(chosen.result, Success):
            if any(change.safety is Safety.SAFE for change in chosen.skipped):
                refused = "each safe change shares its lines with a review change (or a notebook has review changes)"
        return chosen.result, chosen.skipped, refused

    def _targets(self) -> list[tuple[Target, _Root]]:
        """Every file to port, with the input it came from."""
        out = os.path.abspath(self.options.out_dir) if self.options.out_dir else None
        accept: Callable[[str], bool] | None = None
        if not self.options.python_only:  # a repository is ported whole: pins, launchers, configs
            from porter.filetypes import handles as accept  # light: libcst only when a file is ported
        found: list[tuple[Target, _Root]] = []
        for raw, root in self.roots.items():
            for target in discover([raw], PORTED_SUFFIXES, root.exclude, use_git=True, accept=accept):
                if out is not None and not target.explicit and inside(os.path.abspath(target.path), out):
                    continue  # never port the output of an earlier run into itself
                found.append((target, root))
            if os.path.isdir(raw) and (not found or found[-1][1] is not root):
                self.empty.append(os.path.normpath(raw))
        return found

    def _sinks(self) -> list[Sink]:
        options, outputs = self.options, self.outputs
        sinks: list[Sink] = []
        if options.git_branch:
            from porter.run.sinks.gitbranch import GitBranch

            sinks.append(GitBranch(options.git_branch, self.repos, outputs))
        elif options.write:
            from porter.run.sinks.inplace import InPlace

            sinks.append(InPlace())
        if options.out_dir:
            from porter.run.sinks.mirror import Mirror

            mirrored = [(root.path, root.out) for root in self.roots.values() if root.out and os.path.isdir(root.path)]
            sinks.append(Mirror(options.out_dir, mirrored, outputs))
        if options.patch_file:
            from porter.run.sinks.patch import Patch, patch_base

            roots = list(self.roots.values())
            folders = [root.path if os.path.isdir(root.path) else os.path.dirname(root.path) or "." for root in roots]
            sinks.append(Patch(options.patch_file, patch_base(folders, [root.git for root in roots]), outputs))
        if options.reports or options.stdout_report:
            from porter.reports.json_report import RunRecord, escaped
            from porter.run.sinks.reports import Reports

            record = RunRecord(command=["porter", "migrate", *(escaped(path) for path in options.paths)])
            record.options = {key: value for key, value in self.config.values.items() if key != "cache-dir"}
            sinks.append(Reports(options.reports, record, outputs, self.stats, options.stdout_report))
        return sinks

    def _cache(self) -> Cache | None:
        if not self.config["cache"]:
            return None
        from porter.run.cache import Cache

        return Cache(self.config.cache_dir)


def migrate_paths(options: MigrateOptions, say: Callable[[str], None] | None = None) -> Generator[FileOutcome, None, None]:
    """Port ``options.paths``; yield each file's outcome as soon as it is known, in a stable
    order. Raises ``MigrateError`` before anything is done when the options are unusable."""
    yield from Migration(options, say or _to_stderr)


def _prepare(options: MigrateOptions) -> dict[str, _Root]:
    if options.write and options.out_dir:
        raise MigrateError("--write and --out are exclusive: port in place, or into a mirror tree")
    if options.git_branch and options.out_dir:
        raise MigrateError("--git-branch commits the port in place; it cannot be combined with --out")
    if options.allow_dirty and not options.git_branch:
        raise MigrateError("--allow-dirty only applies with --git-branch")
    for report in options.reports:
        if not report.lower().endswith(REPORT_SUFFIXES):
            raise MigrateError(f"--report {report}: unknown format (use .json, .sarif or .md)")
    for path in options.paths:
        _check_portable(path, options.python_only)
    overrides = options.overrides()
    try:
        roots = {raw: _root(raw, overrides, options) for raw in dict.fromkeys(options.paths)}
    except ConfigError as error:
        raise MigrateError(str(error)) from None
    if options.out_dir:
        _assign_out(list(roots.values()), options.out_dir)
    return roots


def _check_portable(path: str, python_only: bool) -> None:
    """A file named explicitly must be one porter ports (a folder is searched, a missing path is
    reported per file). A Python script without a suffix is accepted (pre-commit passes them)."""
    if os.path.isdir(path) or os.path.islink(path) or not os.path.exists(path) or path.endswith(PORTED_SUFFIXES):
        return
    if not python_only:
        from porter.filetypes import handles

        if handles(path):
            return
    if "." not in os.path.basename(path) and _python_shebang(path):
        return
    hint = " with --python-only" if python_only else ""
    raise MigrateError(f"{path}: not a file porter ports{hint}")


def _python_shebang(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return True  # unreadable: the batch reports it for this file
    return first.startswith(b"#!") and b"python" in first


def _root(raw: str, overrides: dict[str, object], options: MigrateOptions) -> _Root:
    config = load_config(raw).with_overrides(overrides)
    engine = Options(prefilter=options.prefilter, **to_options_fields(config))
    exclude = tuple(config["exclude"]) + tuple(options.exclude)
    normalized = os.path.normpath(raw)
    folder = normalized if os.path.isdir(normalized) else (os.path.dirname(normalized) or ".")
    repo = git_toplevel(folder) if os.path.exists(folder) else None
    ignores = per_file_ignores(config)
    return _Root(normalized, config, engine, exclude, ignores, os.path.abspath(repo or folder), repo and os.path.abspath(repo))


def _file_options(target: Target, root: _Root, repo_in_port: bool = False) -> Options:
    """The root's options, with the ``per-file-ignores`` codes of this file suppressed, and
    ``repo_in_port`` for a Python file of a repository that is being ported."""
    codes = ignored_for(target.path, root.config.root, root.ignores)
    options = root.options.with_changes(suppress=codes) if codes else root.options
    return options.with_changes(repo_in_port=True) if repo_in_port and target.path.endswith(".py") else options


# A CUDA-ism, or code that already targets Neuron: a repository with one in any file is being
# ported, so the performance rules run on all its Python files.
_PORTED_REPO = re.compile(rb"cuda|nccl|NCCL|" + TARGETS_NEURON.encode())


def _projects_in_port(owned: list[tuple[Target, _Root]], projects: _Projects) -> set[str]:
    """The projects of a directory port in which some Python file has a CUDA-ism or targets
    Neuron (issue 16 §5: the training engine module of a ported repository holds the hot loop,
    often with no ``cuda`` string of its own)."""
    found: set[str] = set()
    for target, root in owned:
        if target.error or not target.path.endswith(".py") or not os.path.isdir(root.path):
            continue
        project = projects.of(target, root)
        if project in found:
            continue
        try:
            with open(target.path, "rb") as handle:
                data = handle.read(root.options.max_file_size)
        except OSError:
            continue  # the batch reports it for this file
        if _PORTED_REPO.search(data):
            found.add(project)
    return found


_PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")


class _Projects:
    """The project a file belongs to: the nearest folder (up to its repository) holding a
    ``.git``, ``pyproject.toml``, ``setup.py`` or ``setup.cfg``, else the repository: a folder
    of several checkouts is not one repository. Directory scans are cached."""

    def __init__(self) -> None:
        self._marked: dict[str, bool] = {}

    def of(self, target: Target, root: _Root) -> str:
        top = root.repo
        folder = os.path.dirname(os.path.abspath(target.path))
        while inside(folder, top) and folder != top:
            if self._is_project(folder):
                return folder
            folder = os.path.dirname(folder)
        return top

    def _is_project(self, folder: str) -> bool:
        known = self._marked.get(folder)
        if known is None:
            known = self._marked[folder] = any(os.path.exists(os.path.join(folder, marker)) for marker in _PROJECT_MARKERS)
        return known


def _assign_out(roots: list[_Root], out_dir: str) -> None:
    out = os.path.realpath(out_dir)
    for root in roots:
        folder = os.path.realpath(root.path if os.path.isdir(root.path) else os.path.dirname(root.path) or ".")
        if inside(folder, out):  # the copy would land on (or among) the sources it copies
            raise MigrateError(f"--out {out_dir}: the output folder is, or contains, the input {root.path}; choose another folder")
    folders = [root for root in roots if os.path.isdir(root.path)]
    for root in roots:
        if root not in folders or len(folders) == 1:
            root.out = out_dir  # a file lands at DIR/<its name>
        else:
            root.out = os.path.join(out_dir, os.path.basename(os.path.abspath(root.path)))
    names = [root.out for root in folders]
    if len(folders) > 1 and len(set(names)) != len(names):
        raise MigrateError("--out: two folders given have the same name; port them in separate runs")


def _check_git(options: MigrateOptions, roots: dict[str, _Root]) -> list[str]:
    if not options.git_branch:
        return []
    from porter.run.gitops import GitError, check_ready

    for root in roots.values():
        if root.git is None:
            raise MigrateError(f"--git-branch: {root.path} is not inside a git work tree")
    repos = sorted({root.repo for root in roots.values()})
    for repo in repos:
        try:
            check_ready(repo, options.git_branch, options.allow_dirty)
        except GitError as error:
            raise MigrateError(str(error)) from None
    return repos


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises KeyboardInterrupt (so a batch ends as on Ctrl-C)."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
