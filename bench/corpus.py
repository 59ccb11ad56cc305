"""The real-world corpus: port real training code from PyPI packages and measure the port.

    python bench/corpus.py [--slice] [--style neuron|accelerator|both] [--jobs N]
                           [--diffs DIR] [--json OUT] [--no-help-check] [--help-deps DIR] [--help-timeout S] [--keep DIR [--reuse]] [--list]

The corpus is real code nobody here wrote: the exact archives pinned in ``bench/corpus_manifest.json``
(name, version, file name, sha256), fetched at run time with ``pip download --no-deps`` into the
cache folder (``$PORTER_CORPUS_DIR``, else ``~/.cache/porter-corpus``) and unpacked there. Nothing of
their code is in this repository. Every run checks each archive's sha256 (a cached archive that
does not match is downloaded again; a fresh download that does not match is an error) and
re-syncs the unpacked tree from the checked archive, so no cached byte is trusted unchecked.
Per project the manifest's globs pick the training-relevant files (trainers, loops, recipes,
scripts), not the whole package; ``--slice`` uses the manifest's fixed ``slice`` list instead.

For each style the selected files are copied to a temp tree, ported with the real CLI
(``porter migrate TREE --out OUT --report r.json -j N --no-cache``), and every output that differs
from its source is ported again (same paths, ``--out OUT2``). Then, checked here on the bytes, not taken from porter's word:

* re-parse: every ported file parses with libcst;
* compile: every ported file compiles (CPython) where its original did;
* idempotent: the second port changes no byte of any ported file (the denominator: every file
  that did not fail; a file the port left as it was counts as idempotent when it is byte-identical);
* byte-identical: every file the report calls unchanged is byte-for-byte its original;
* crashes: failures of kind ``internal`` in the report;
* ``--help``: for each script (an ``if __name__ == "__main__":`` block and argparse or click),
  ``python FILE --help`` in a clean temp folder with the project's unpacked root on PYTHONPATH,
  on the original (from the same temp tree) and, where the original prints its usage, on the port.
  A script whose original fails (usually a dependency not installed here) is counted as not run.

Step-loop detector (the "files with a step loop" row, and the slice's choice): a file has a step
loop when some ``for``/``while`` loop, in its own body (not in a function defined inside it),
either (train) calls ``.backward(...)``/``.manual_backward(...)``/``torch.autograd.backward(...)``,
or ``X.step(...)`` where X's last name looks like an optimizer or a grad scaler (contains "optim",
is "opt"/"scaler" or ends in "_opt"/"_scaler"), or a function or method of the same file (matched
by its last name) that does one of these, directly or through other such functions (the common
``for batch in loader: train_step(batch)``); or (eval) calls a callee whose last name contains
"model" or "net" and names something containing "loss", "criterion" or "metric".

Verifier findings: totalled from a ``verifier`` field per file in the JSON report when porter has
one; otherwise the table says the verifier is not in this porter.

Per run the table also gives edits by rule (safe / review edits and markers per rule name, from the
report's changes and porter's rule registry) and the repository-wide row: how many files the rules
that act only in files being ported (``requires_port_context``: the performance rules NRN4xx-NRN8xx
and fp16->bf16, which a repository port runs on every Python file) touched, and how many of those
hold no ``cuda`` string at all (case-insensitive, in the original bytes): files reached only because
their repository is ported.
"""

from __future__ import annotations

import argparse
import ast
import collections
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
import zipfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = Path(__file__).resolve().parent / "corpus_manifest.json"
STYLES = ("neuron", "accelerator")
HELP_TIMEOUT = 20.0
# What the corpus scripts import beyond this venv, for --help-deps DIR (installed with
# `pip install --no-deps --target DIR ...`; torch stays the venv's 2.13.0): check_corpus.py's DEPS
# (torchrl's and torchtune's) plus DeepSpeed's (hjson, py-cpuinfo, msgpack, einops, ninja) and
# composer's launcher (requests and its own dependencies).
HELP_DEPS = ("tensordict==0.15.3", "pyvers", "hydra-core==1.3.8", "omegaconf", "antlr4-python3-runtime==4.9.3",
             "gymnasium==1.4.0", "cloudpickle", "farama-notifications", "vmas==1.5.2", "gym==0.26.2", "gym-notices",
             "six", "torchao==0.11.0", "torchdata==0.11.0", "sentencepiece", "tiktoken", "hjson", "py-cpuinfo",
             "msgpack", "einops", "ninja", "requests", "urllib3", "certifi", "charset-normalizer")
# pip's messages when the registry cannot be reached at all (not: the file is not there).
UNREACHABLE = re.compile(
    r"NewConnectionError|Max retries exceeded|Temporary failure in name resolution|"
    r"Network is unreachable|Connection refused|ConnectTimeout|ReadTimeout|timed out|"
    r"No route to host|ProxyError|SSLError",
)


class CorpusError(Exception):
    """A clear, per-project reason the corpus could not be built."""

    def __init__(self, message: str, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


# ---------------------------------------------------------------- manifest, download, unpack


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    file: str
    sha256: str
    root: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    why: str

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


def load_manifest(path: Path = MANIFEST) -> tuple[list[Project], list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    projects = [
        Project(
            p["name"], p["version"], p["file"], p["sha256"], p.get("root", ""),
            tuple(p["include"]), tuple(p.get("exclude", ())), p.get("why", ""),
        )
        for p in data["projects"]
    ]
    return projects, list(data.get("slice", []))


def cache_dir() -> Path:
    return Path(os.environ.get("PORTER_CORPUS_DIR") or Path.home() / ".cache" / "porter-corpus")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pip_args(project: Project) -> list[str]:
    """Ask pip for exactly the pinned file: the sdist, or the wheel with its own platform tags."""
    spec = f"{project.name}=={project.version}"
    if project.file.endswith((".tar.gz", ".zip")):
        return [spec, "--no-binary", ":all:"]
    # name-version(-build)?-python-abi-platform.whl
    python, abi, platform = project.file[: -len(".whl")].split("-")[-3:]
    args = [spec, "--only-binary", ":all:"]
    if platform != "any":
        args += ["--platform", platform, "--abi", abi, "--implementation", python[:2]]
        args += ["--python-version", python[2:3] + "." + python[3:]]
    return args


def fetch(project: Project, cache: Path, log: Any = print) -> Path:
    """The project's archive in the cache, its sha256 checked; downloaded when missing or wrong."""
    archives = cache / "archives"
    archives.mkdir(parents=True, exist_ok=True)
    archive = archives / project.file
    if archive.exists():
        if sha256_of(archive) == project.sha256:
            return archive
        log(f"corpus: {archive} does not match its sha256 in the manifest: downloading it again")
        archive.unlink()
    with tempfile.TemporaryDirectory(dir=archives) as tmp:
        command = [sys.executable, "-m", "pip", "--timeout", "30", "--retries", "2", "download",
                   "--no-deps", "-q", "-d", tmp, *pip_args(project)]
        done = subprocess.run(command, capture_output=True, text=True)
        got = Path(tmp) / project.file
        if done.returncode != 0 or not got.exists():
            text = (done.stderr + done.stdout).strip()
            tail = "\n".join(line for line in text.splitlines() if "ignored: it is neither" not in line)[-800:]
            raise CorpusError(
                f"{project.key}: pip download did not give {project.file} (exit {done.returncode}): {tail}",
                unreachable=bool(UNREACHABLE.search(text)),
            )
        actual = sha256_of(got)
        if actual != project.sha256:
            raise CorpusError(f"{project.key}: downloaded {project.file} has sha256 {actual}, manifest says {project.sha256}")
        os.replace(got, archive)
    return archive


def _members(archive: Path) -> Iterable[tuple[str, bytes, bool]]:
    """(relative path, bytes, executable) of each regular file; links and odd paths are skipped."""
    if archive.name.endswith(".whl") or archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zipped:
            for info in zipped.infolist():
                if info.is_dir() or (info.external_attr >> 16) & 0o170000 == 0o120000:
                    continue
                yield info.filename, zipped.read(info), bool((info.external_attr >> 16) & 0o111)
    else:
        with tarfile.open(archive) as tarred:
            for member in tarred.getmembers():
                if not member.isfile():
                    continue
                handle = tarred.extractfile(member)
                if handle is not None:
                    yield member.name, handle.read(), bool(member.mode & 0o111)


def unpack(project: Project, archive: Path, cache: Path) -> Path:
    """Sync cache/src/<name>-<version> with the checked archive; return the project's root there."""
    target = cache / "src" / project.key
    wanted: set[Path] = set()
    for name, data, executable in _members(archive):
        parts = PurePosixPath(name).parts
        if not parts or name.startswith("/") or ".." in parts:
            continue
        path = target.joinpath(*parts)
        wanted.add(path)
        if path.is_symlink() or (path.exists() and not path.is_file()):
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        if not path.exists() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Its own temporary name: two corpus runs syncing one cache must never move each
            # other's half-written file into place (a reader then sees a short file).
            tmp = path.with_name(f"{path.name}.corpus-tmp-{os.getpid()}")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        mode = 0o755 if executable else 0o644
        if path.stat().st_mode & 0o777 != mode:
            path.chmod(mode)
    for folder, _, names in os.walk(target):
        for name in names:
            path = Path(folder) / name
            if path not in wanted and ".corpus-tmp-" not in name:  # another run's file being written
                path.unlink()  # not in the archive: not trusted, not part of the corpus
    return target / project.root if project.root else target


def glob_regex(pattern: str) -> re.Pattern[str]:
    """'**/' is any number of folders, '*' and '?' stay inside one path segment."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += r"(?:[^/]+/)*"
            i += 3
        elif pattern.startswith("**", i):
            out += r".*"
            i += 2
        elif pattern[i] == "*":
            out += r"[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += r"[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + r"\Z")


def select(project: Project, root: Path) -> list[str]:
    """The project's corpus files: relative '/' paths under root matching include, not exclude."""
    include = [glob_regex(p) for p in project.include]
    exclude = [glob_regex(p) for p in project.exclude]
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.endswith(".dist-info"))
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            if any(r.match(rel) for r in include) and not any(r.match(rel) for r in exclude):
                found.append(rel)
    return sorted(found)


@dataclass(frozen=True)
class CorpusFile:
    project: str  # project key, also its folder in the temp trees
    rel: str  # path under the project's root
    source: Path  # the unpacked file in the cache
    root: Path  # the project's unpacked root (PYTHONPATH for --help)

    @property
    def key(self) -> str:
        return f"{self.project}/{self.rel}"


def build(slice_only: bool = False, log: Any = print) -> list[CorpusFile]:
    projects, slice_keys = load_manifest()
    cache = cache_dir()
    files: list[CorpusFile] = []
    for project in projects:
        root = unpack(project, fetch(project, cache, log), cache)
        files += [CorpusFile(project.key, rel, root / rel, root) for rel in select(project, root)]
    if slice_only:
        by_key = {f.key: f for f in files}
        missing = [k for k in slice_keys if k not in by_key]
        if missing:
            raise CorpusError(f"slice files not in the corpus: {', '.join(missing)}")
        files = [by_key[k] for k in slice_keys]
    return files


# ---------------------------------------------------------------- what a file holds

OPTIMIZER_LIKE = re.compile(r"optim|^opt$|_opt$|^scaler$|_scaler$", re.I)
MODEL_LIKE = re.compile(r"model|net", re.I)
LOSS_LIKE = re.compile(r"loss|criterion|metric", re.I)


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _last_name(node.func)
    if isinstance(node, ast.Subscript):
        return _last_name(node.value)
    return ""


def _own_nodes(loop: ast.AST) -> Iterable[ast.AST]:
    """Nodes of a loop's body and else, not entering functions, lambdas or classes defined there."""
    stack = list(ast.iter_child_nodes(loop))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _steps(call: ast.Call, stepping: set[str]) -> bool:
    """A backward, an optimizer/scaler step, or a call of a function of this file that steps."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in ("backward", "manual_backward"):
            return True
        if func.attr == "step" and OPTIMIZER_LIKE.search(_last_name(func.value)):
            return True
    return _last_name(func) in stepping


def stepping_functions(tree: ast.AST) -> set[str]:
    """Names of this file's functions and methods that step, directly or through each other."""
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    calls = {id(f): [n for n in _own_nodes(f) if isinstance(n, ast.Call)] for f in functions}
    stepping: set[str] = set()
    grew = True
    while grew:
        grew = False
        for f in functions:
            if f.name not in stepping and any(_steps(c, stepping) for c in calls[id(f)]):
                stepping.add(f.name)
                grew = True
    return stepping


def loop_kind(loop: ast.AST, stepping: set[str] = frozenset()) -> str | None:  # type: ignore[assignment]
    """'train', 'eval' or None for one for/while loop (see the module docstring)."""
    model_call = loss_name = False
    for node in _own_nodes(loop):
        if isinstance(node, ast.Call):
            if _steps(node, stepping):
                return "train"
            if MODEL_LIKE.search(_last_name(node.func)):
                model_call = True
        elif isinstance(node, ast.Name) and LOSS_LIKE.search(node.id):
            loss_name = True
        elif isinstance(node, ast.Attribute) and LOSS_LIKE.search(node.attr):
            loss_name = True
    return "eval" if model_call and loss_name else None


@dataclass(frozen=True)
class Facts:
    compiles: bool
    step_loop: str | None  # 'train' / 'eval' / None
    script: bool  # has a __main__ block and argparse or click


def facts(data: bytes, name: str = "<corpus>") -> Facts:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(data, name)
            compile(tree, name, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return Facts(False, None, False)
    stepping = stepping_functions(tree)
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]
    kinds = {loop_kind(n, stepping) for n in loops}
    step = "train" if "train" in kinds else ("eval" if "eval" in kinds else None)
    main_block = any(
        isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and isinstance(n.test.left, ast.Name)
        and n.test.left.id == "__name__" and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in n.test.comparators)
        for n in tree.body
    )
    cli = False
    for n in ast.walk(tree):
        if isinstance(n, ast.Import) and any(a.name.split(".")[0] in ("argparse", "click") for a in n.names):
            cli = True
        elif isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] in ("argparse", "click"):
            cli = True
    return Facts(True, step, main_block and cli)


def _compiles(data: bytes, name: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(data, name, "exec", dont_inherit=True)
            return True
        except (SyntaxError, ValueError):
            return False


def _reparses(data: bytes) -> bool:
    import libcst as cst

    try:
        cst.parse_module(data)
        return True
    except Exception:  # noqa: BLE001 - any parser error means: does not re-parse
        return False


# ---------------------------------------------------------------- porting


def stage(files: list[CorpusFile], tree: Path) -> None:
    """The temp copy porter works on: <project>/<rel>, modes kept."""
    for f in files:
        target = tree / f.project / f.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f.source, target)


def migrate(src: Path, out: Path, report: Path, style: str, jobs: int) -> tuple[int, str]:
    command = [sys.executable, "-m", "porter", "migrate", str(src), "--out", str(out), "--report", str(report),
               "--style", style, "-j", str(jobs), "--no-cache", "--no-diff", "--no-progress", "-q",
               "--time-limit", "900"]  # the default 120 s cut off deepspeed's engine.py on a loaded machine
    done = subprocess.run(command, capture_output=True, text=True, cwd=src.parent)
    summary = (done.stderr.strip().splitlines() or ["(no summary)"])[-1]
    return done.returncode, summary


@dataclass
class FileResult:
    key: str
    status: str  # changed / unchanged / failed / missing
    failure: str = ""
    failure_kind: str = ""
    reparses: bool = True
    compiles: bool = True  # where the original compiled
    original_compiles: bool = True
    idempotent: bool = True
    identical: bool = True  # for unchanged files
    changes: list[dict[str, Any]] = field(default_factory=list)
    verifier: list[dict[str, Any]] = field(default_factory=list)
    cuda_string: bool = False  # the original holds "cuda" (any case) somewhere


CUDA_STRING = re.compile(rb"cuda", re.I)


@dataclass(frozen=True)
class RuleIndex:
    """Porter's rules by code: the rule's name, and whether it acts only in files being ported."""

    names: dict[str, str]
    port_context: frozenset[str]

    @classmethod
    def of_porter(cls) -> RuleIndex:
        sys.path.insert(0, str(ROOT))
        from porter.engine.registry import all_rules

        rules = all_rules()
        names = {code: rule.name for rule in rules for code in rule.all_codes()}
        return cls(names, frozenset(code for rule in rules if rule.requires_port_context for code in rule.all_codes()))


def _report_files(report: dict[str, Any], tree: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, Any]], dict[str, Any] | None]:
    """Changes and failures by file key ('<project>/<rel>'), and per-file verifier data if present."""
    def key(entry: dict[str, Any]) -> str:
        # "repo" names the repository (its remote or folder name); paths are relative to the
        # ported folder, which is ``tree`` here (older reports held an absolute repo path)
        repo = entry.get("repo") or ""
        path = os.path.join(repo if os.path.isabs(repo) else str(tree), entry["path"])
        return os.path.relpath(path, tree).replace(os.sep, "/")

    changes: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for change in report.get("changes", []):
        changes[key(change)].append(change)
    failures = {key(f): f for f in report.get("failures", [])}
    verifier = None
    if isinstance(report.get("files"), list) and any("verifier" in f for f in report["files"]):
        verifier = {key(f): f.get("verifier") for f in report["files"]}
    return changes, failures, verifier


def _report_seconds(*reports: Path) -> float:
    """Wall time of earlier runs, from their JSON reports' start and finish stamps."""
    total = 0.0
    for path in reports:
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            stamps = [time.mktime(time.strptime(data[k], "%Y-%m-%dT%H:%M:%SZ")) for k in ("started", "finished")]
            total += stamps[1] - stamps[0]
    return total


def port_style(files: list[CorpusFile], style: str, jobs: int, work: Path, reuse: bool = False) -> dict[str, Any]:
    base = work / style
    tree, out, second_src, again = base / "src", base / "out", base / "src2", base / "out2"
    if reuse:  # the trees of an earlier --keep run: check them again, port nothing
        if not (base / "r1.json").exists():
            raise CorpusError(f"{base} holds no earlier run (r1.json)")
        stale = [f.key for f in files if not (tree / f.project / f.rel).is_file()
                 or (tree / f.project / f.rel).read_bytes() != f.source.read_bytes()]
        if stale:
            raise CorpusError(f"{base} was not kept from this corpus ({len(stale)} files differ, e.g. {stale[0]})")
        return _check_style(files, style, base, _report_seconds(base / "r1.json", base / "r2.json"),
                            [0, 0], ["(reused)", "(reused)"])
    stage(files, tree)
    started = time.perf_counter()
    code1, summary1 = migrate(tree, out, base / "r1.json", style, jobs)
    # The second pass ports every output that differs from its source, at its own path; a file the
    # first pass left as it was would meet the same bytes again (and its identity is checked below).
    for f in files:
        ported_path = out / f.project / f.rel
        if ported_path.exists() and ported_path.read_bytes() != (tree / f.project / f.rel).read_bytes():
            (second_src / f.project / f.rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ported_path, second_src / f.project / f.rel)
    code2, summary2 = 0, "(nothing to port again)"
    if second_src.exists():
        code2, summary2 = migrate(second_src, again, base / "r2.json", style, jobs)
    return _check_style(files, style, base, time.perf_counter() - started, [code1, code2], [summary1, summary2])


def _check_style(files: list[CorpusFile], style: str, base: Path, elapsed: float, exits: list[int],
                 summaries: list[str]) -> dict[str, Any]:
    tree, out, again = base / "src", base / "out", base / "out2"
    report = json.loads((base / "r1.json").read_text(encoding="utf-8")) if (base / "r1.json").exists() else {}
    changes, failures, verifier = _report_files(report, tree)
    results: list[FileResult] = []
    for f in files:
        original = (tree / f.project / f.rel).read_bytes()
        ported_path = out / f.project / f.rel
        result = FileResult(f.key, "unchanged", original_compiles=_compiles(original, f.key),
                            cuda_string=CUDA_STRING.search(original) is not None)
        if f.key in failures:
            result.status, result.failure = "failed", str(failures[f.key].get("reason"))
            result.failure_kind = str(failures[f.key].get("kind"))
        elif f.key in changes:
            result.status, result.changes = "changed", changes[f.key]
        if verifier is not None:
            result.verifier = list(verifier.get(f.key) or [])
        if not ported_path.exists():
            result.status = "missing" if result.status != "failed" else "failed"
            result.identical = result.status == "failed"
            results.append(result)
            continue
        ported = ported_path.read_bytes()
        if ported != original:
            second = (again / f.project / f.rel).read_bytes() if (again / f.project / f.rel).exists() else None
            result.idempotent = second == ported
        if result.status == "changed" or ported != original:
            result.reparses = _reparses(ported)
            result.compiles = _compiles(ported, f.key) or not result.original_compiles
        if result.status == "unchanged":
            result.identical = ported == original
        results.append(result)
    reported = int(report.get("totals", {}).get("files", 0))
    return {"style": style, "results": results, "seconds": elapsed, "exit": exits, "reported": reported,
            "summary": summaries, "verifier_present": verifier is not None, "out": out, "tree": tree}


# ---------------------------------------------------------------- CPU --help check


def run_help(path: Path, pythonpath: Path, deps: Path | None = None, timeout: float = HELP_TIMEOUT) -> tuple[bool, str]:
    """(works, why not): `python FILE --help` prints a usage and exits 0 within the time limit.

    ``deps``: a folder of the projects' own dependencies (``pip install --no-deps --target``),
    after the project's root on the path; torch and the rest come from this interpreter."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PORTER_"))}
    path_entries = [str(pythonpath), *([str(deps)] if deps is not None else [])]
    env.update(PYTHONPATH=os.pathsep.join(path_entries), PYTHONDONTWRITEBYTECODE="1", CUDA_VISIBLE_DEVICES="")
    with tempfile.TemporaryDirectory() as clean:
        try:
            done = subprocess.run([sys.executable, str(path), "--help"], cwd=clean, env=env,
                                  capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return False, f"timeout {timeout:.0f}s"
    text = done.stdout + done.stderr
    if done.returncode == 0 and re.search(r"usage", text, re.I):
        return True, ""
    missing = re.findall(r"ModuleNotFoundError: No module named '([^']+)'", text)
    if missing:
        return False, f"missing module {missing[-1]}"
    last = [line for line in text.strip().splitlines() if line.strip()]
    return False, (last[-1][:160] if last else f"exit {done.returncode}")


def help_check(files: list[CorpusFile], runs: list[dict[str, Any]], jobs: int,
               deps: Path | None = None, timeout: float = HELP_TIMEOUT) -> dict[str, Any]:
    scripts = [f for f in files if facts(f.source.read_bytes(), f.key).script]
    tree = runs[0]["tree"]
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        originals = list(pool.map(lambda f: run_help(tree / f.project / f.rel, f.root, deps, timeout), scripts))
    working = [f for f, (ok, _) in zip(scripts, originals) if ok]
    not_run = collections.Counter(why.split(" ")[0] + (" " + why.split(" ")[-1] if why.startswith("missing") else "")
                                  for ok, why in originals if not ok)
    per_style: dict[str, Any] = {}
    for run in runs:
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            out = run["out"]
            ports = list(pool.map(lambda f, out=out: run_help(out / f.project / f.rel, f.root, deps, timeout), working))
        broken = [(f.key, why) for f, (ok, why) in zip(working, ports) if not ok]
        per_style[run["style"]] = broken
    return {"scripts": len(scripts), "original_works": len(working), "not_run": dict(not_run.most_common()),
            "broken": per_style, "working": [f.key for f in working]}


# ---------------------------------------------------------------- the table


def pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:.1f}% ({n}/{d})" if d else "n/a (0)"


def by_rule(results: list[FileResult], rules: RuleIndex) -> dict[str, dict[str, int]]:
    """Safe edits, review edits and markers per rule name (a code porter does not list: itself)."""
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for r in results:
        for change in r.changes:
            kind = "markers" if change.get("kind") == "marker" else str(change.get("safety"))
            counts[rules.names.get(change["code"], change["code"])][kind] += 1
    table = {name: {k: c[k] for k in ("safe", "review", "markers")} for name, c in counts.items()}
    return dict(sorted(table.items(), key=lambda item: (-sum(item[1].values()), item[0])))


def repo_wide(results: list[FileResult], rules: RuleIndex) -> tuple[list[str], list[str]]:
    """(files the port-context rules touched, those of them with no CUDA string)."""
    touched = [r for r in results if r.status == "changed" and any(c["code"] in rules.port_context for c in r.changes)]
    return [r.key for r in touched], [r.key for r in touched if not r.cuda_string]


def summarize(run: dict[str, Any], rules: RuleIndex | None = None) -> dict[str, Any]:
    rules = rules or RuleIndex.of_porter()
    results: list[FileResult] = run["results"]
    wide, wide_no_cuda = repo_wide(results, rules)
    changed = [r for r in results if r.status == "changed"]
    touched = [r for r in results if r.status in ("changed",)]
    edits = [c for r in results for c in r.changes if c.get("kind") == "edit"]
    markers = [c for r in results for c in r.changes if c.get("kind") == "marker"]
    unchanged = [r for r in results if r.status == "unchanged"]
    compiled = [r for r in touched if r.original_compiles]
    verifier: dict[str, int] | None = None
    if run["verifier_present"]:
        verifier = dict(collections.Counter(
            str(v.get("kind", "?")) if isinstance(v, dict) else str(v) for r in results for v in r.verifier
        ))
    return {
        "files": len(results),
        "ported": len(changed),
        "unchanged": len(unchanged),
        "failed": sum(r.status == "failed" and r.failure_kind != "internal" for r in results),
        "crashes": sum(r.failure_kind == "internal" for r in results),
        "missing_outputs": sum(r.status == "missing" for r in results),
        # A --reuse of a run over a larger corpus reports more files than these: then unknown.
        "not_in_report": len(results) - run["reported"] if run["reported"] <= len(results) else None,
        "edits_safe": sum(c.get("safety") == "safe" for c in edits),
        "edits_review": sum(c.get("safety") == "review" for c in edits),
        "markers": len(markers),
        "reparse": [sum(r.reparses for r in touched), len(touched)],
        "compile": [sum(r.compiles for r in compiled), len(compiled)],
        "idempotent": [sum(r.idempotent for r in results if r.status != "failed"), sum(r.status != "failed" for r in results)],
        "identical": [sum(r.identical for r in unchanged), len(unchanged)],
        "by_code": dict(collections.Counter(c["code"] for c in edits + markers).most_common()),
        "edits_by_code": dict(collections.Counter(c["code"] for c in edits).most_common()),
        "by_rule": by_rule(results, rules),
        "repo_wide_files": len(wide),
        "repo_wide_no_cuda": len(wide_no_cuda),
        "repo_wide_no_cuda_files": wide_no_cuda,
        "verifier": verifier,
        "seconds": round(run["seconds"], 1),
        "not_idempotent": [r.key for r in results if r.status != "failed" and not r.idempotent],
        "not_identical": [r.key for r in unchanged if not r.identical],
        "not_reparsed": [r.key for r in touched if not r.reparses],
        "not_compiled": [r.key for r in compiled if not r.compiles],
        "crashed": [f"{r.key}: {r.failure}" for r in results if r.failure_kind == "internal"],
        "failures": [f"{r.key}: {r.failure}" for r in results if r.status == "failed" and r.failure_kind != "internal"],
        "exit": run["exit"],
        "porter_summary": run["summary"],
    }


def print_table(summaries: dict[str, dict[str, Any]], corpus: dict[str, Any], helped: dict[str, Any] | None) -> None:
    styles = list(summaries)
    width = 26
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, fn: Any) -> None:
        rows.append((label, [fn(summaries[s]) for s in styles]))

    row("files", lambda s: str(s["files"]))
    row("files ported", lambda s: str(s["ported"]))
    row("skipped (not in report)", lambda s: "n/a" if s["not_in_report"] is None else str(s["not_in_report"]))
    row("failed (clear reason)", lambda s: str(s["failed"]))
    row("crashes (internal)", lambda s: str(s["crashes"]))
    row("edits safe / review", lambda s: f"{s['edits_safe']} / {s['edits_review']}")
    row("review markers", lambda s: str(s["markers"]))
    row("repo-wide rules: files", lambda s: f"{s['repo_wide_files']} ({s['repo_wide_no_cuda']} no CUDA string)")
    row("re-parse", lambda s: pct(*s["reparse"]))
    row("compile (orig. compiled)", lambda s: pct(*s["compile"]))
    row("idempotent", lambda s: pct(*s["idempotent"]))
    row("byte-identical unchanged", lambda s: pct(*s["identical"]))
    row("files with a step loop", lambda s: f"{corpus['step_train'] + corpus['step_eval']} "
                                            f"({corpus['step_train']} train, {corpus['step_eval']} eval)")
    if helped is None:
        row("--help: port broke it", lambda s: "not run (--no-help-check)")
    else:
        row("--help: scripts / orig ok", lambda s: f"{helped['scripts']} / {helped['original_works']}")
        row("--help: port broke it", lambda s: f"{len(helped['broken'][s['style']])} of {helped['original_works']}")
    row("verifier findings by kind", lambda s: "not in this porter" if s["verifier"] is None
        else (", ".join(f"{k} {v}" for k, v in sorted(s["verifier"].items())) or "0"))
    row("time (2 passes)", lambda s: f"{s['seconds']:.1f}s")
    codes = sorted({c for s in styles for c in summaries[s]["by_code"]},
                   key=lambda c: -sum(summaries[s]["by_code"].get(c, 0) for s in styles))
    for code in codes:
        row(f"  {code}", lambda s, code=code: str(s["by_code"].get(code, 0)))
    names = sorted({n for s in styles for n in summaries[s]["by_rule"]},
                   key=lambda n: -sum(sum(summaries[s]["by_rule"].get(n, {}).values()) for s in styles))
    for name in names:
        row(f"  {name}", lambda s, name=name: "{safe} / {review} / {markers}".format(
            **s["by_rule"].get(name, {"safe": 0, "review": 0, "markers": 0})))
    print(f"corpus: {corpus['files']} files from {corpus['projects']} projects ({corpus['scripts']} scripts)")
    print(f"{'':<{width}} | " + " | ".join(f"{s:<24}" for s in styles))
    print("-" * (width + 1) + "+" + "+".join("-" * 26 for _ in styles))
    for label, cells in rows:
        if label == f"  {codes[0] if codes else ''}":
            print(f"{'changes by rule code':<{width}} |")
        if label == f"  {names[0] if names else ''}":
            print(f"{'by rule: safe/review/marks':<{width}} |")
        print(f"{label:<{width}} | " + " | ".join(f"{c:<24}" for c in cells))


def write_diffs(directory: Path, runs: list[dict[str, Any]], files: list[CorpusFile]) -> int:
    written = 0
    for run in runs:
        for f in files:
            old_path, new_path = run["tree"] / f.project / f.rel, run["out"] / f.project / f.rel
            if not new_path.exists():
                continue
            old, new = old_path.read_bytes(), new_path.read_bytes()
            if old == new:
                continue
            diff = difflib.unified_diff(
                old.decode("utf-8", "surrogateescape").splitlines(keepends=True),
                new.decode("utf-8", "surrogateescape").splitlines(keepends=True),
                f"a/{f.key}", f"b/{f.key}",
            )
            target = directory / run["style"] / (f.key + ".diff")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(diff), encoding="utf-8", errors="surrogateescape")
            written += 1
    return written


def run(slice_only: bool, styles: list[str], jobs: int, help_check_on: bool, work: Path,
        log: Any = print, reuse: bool = False, help_deps: Path | None = None,
        help_timeout: float = HELP_TIMEOUT) -> dict[str, Any]:
    files = build(slice_only, log)
    known = [facts(f.source.read_bytes(), f.key) for f in files]
    corpus = {
        "files": len(files),
        "projects": len({f.project for f in files}),
        "per_project": dict(collections.Counter(f.project for f in files)),
        "scripts": sum(k.script for k in known),
        "step_train": sum(k.step_loop == "train" for k in known),
        "step_eval": sum(k.step_loop == "eval" for k in known),
        "step_loop_files": [f.key for f, k in zip(files, known) if k.step_loop],
    }
    runs = [port_style(files, style, jobs, work, reuse) for style in styles]
    helped = help_check(files, runs, jobs, help_deps, help_timeout) if help_check_on else None
    return {"corpus": corpus, "runs": runs, "help": helped, "files": files,
            "summaries": {r["style"]: dict(summarize(r), style=r["style"]) for r in runs}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slice", action="store_true", help="only the manifest's fixed fast slice")
    parser.add_argument("--style", choices=[*STYLES, "both"], default="both")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--diffs", type=Path, help="write each changed file's unified diff under DIR/<style>/")
    parser.add_argument("--json", type=Path, help="write the table (and the lists behind it) as JSON")
    parser.add_argument("--no-help-check", action="store_true", help="skip the CPU `python FILE --help` check")
    parser.add_argument("--help-deps", type=Path, metavar="DIR",
                        help="--help check: the projects' own dependencies, installed with `pip install --no-deps "
                             "--target DIR` followed by HELP_DEPS (torch stays this interpreter's), put on PYTHONPATH "
                             "after the project")
    parser.add_argument("--help-timeout", type=float, default=HELP_TIMEOUT, metavar="S",
                        help=f"--help check: seconds per script (default {HELP_TIMEOUT:.0f}; raise it on a loaded machine)")
    parser.add_argument("--keep", type=Path, help="keep the temp trees (sources, ports) in DIR")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: check the trees an earlier --keep run left in DIR again, port nothing")
    parser.add_argument("--list", action="store_true", help="print the corpus files (and their step loops) and exit")
    args = parser.parse_args(argv)
    styles = list(STYLES) if args.style == "both" else [args.style]
    started = time.perf_counter()
    try:
        if args.list:
            for f in build(args.slice):
                k = facts(f.source.read_bytes(), f.key)
                print(f"{f.key}\t{k.step_loop or '-'}\t{'script' if k.script else '-'}")
            return 0
        if args.keep:
            if not args.reuse:
                shutil.rmtree(args.keep, ignore_errors=True)
                args.keep.mkdir(parents=True)
            result = run(args.slice, styles, args.jobs, not args.no_help_check, args.keep, reuse=args.reuse,
                         help_deps=args.help_deps, help_timeout=args.help_timeout)
        else:
            with tempfile.TemporaryDirectory(prefix="porter-corpus-") as work:
                result = run(args.slice, styles, args.jobs, not args.no_help_check, Path(work),
                             help_deps=args.help_deps, help_timeout=args.help_timeout)
                if args.diffs:
                    shutil.rmtree(args.diffs, ignore_errors=True)
                    print(f"diffs: {write_diffs(args.diffs, result['runs'], result['files'])} written under {args.diffs}")
        if args.keep and args.diffs:
            shutil.rmtree(args.diffs, ignore_errors=True)
            print(f"diffs: {write_diffs(args.diffs, result['runs'], result['files'])} written under {args.diffs}")
    except CorpusError as error:
        print(f"corpus: {error}", file=sys.stderr)
        return 2
    summaries, helped = result["summaries"], result["help"]
    print_table(summaries, result["corpus"], helped)
    print(f"total time {time.perf_counter() - started:.1f}s")
    for style, s in summaries.items():
        for label in ("crashed", "not_reparsed", "not_compiled", "not_idempotent", "not_identical", "failures"):
            for item in s[label][:30]:
                print(f"  {style} {label}: {item}")
        if s["exit"] != [0, 0]:
            print(f"  {style}: porter migrate exits {s['exit']}: {s['porter_summary']}")
        if helped:
            for key, why in helped["broken"][style]:
                print(f"  {style} --help broken by the port: {key}: {why}")
    if helped:
        print(f"--help not run (original does not print its usage here): {helped['not_run']}")
    if args.json:
        data = {"corpus": result["corpus"], "styles": summaries,
                "help": helped, "seconds": round(time.perf_counter() - started, 1)}
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    bad = any(s["crashes"] or s["not_reparsed"] or s["not_compiled"] or s["not_idempotent"] or s["not_identical"]
              or s["missing_outputs"] for s in summaries.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
