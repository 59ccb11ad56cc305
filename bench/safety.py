"""Safety audit: port large real corpora and prove porter never damages code.

Not a test (it takes minutes); prints figures. For each Python file of the corpora:
  * the port runs without crashing (a Failure for unparseable input is fine, an internal error is not);
  * every ported file re-parses (libcst) and compiles (CPython) when the original compiled;
  * porting the ported file again changes nothing (idempotency);
  * files with nothing to port come out of ``porter migrate --out`` byte-identical.

Usage: python bench/safety.py [--jobs N] [--limit N] [--all-files] [--corpus [--slice]] [DIR ...]
Default corpora: the installed torch, transformers, accelerate and datasets packages, plus
samples/ and tests/fixtures/ of this repository.

With ``--corpus`` the audit runs over the real-world corpus of bench/corpus.py (pinned PyPI
archives, sha256-checked, in a temp copy) instead, and adds checks of the real CLI on that copy,
for both styles (neuron, accelerator):
  * idempotency: ``porter migrate SRC --out OUT`` then ``OUT --out OUT2``: no byte of OUT changes;
  * file modes: every file of OUT has its source's mode (the corpus scripts are made +x first);
  * symbolic links: links added to the copy (to a file, to a folder) come out as the same links;
  * temp files: ``*.porter-tmp`` files left in SRC, OUT or OUT2 after the runs (should be 0).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import multiprocessing
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class FileAudit:
    path: str
    status: str  # ported / unchanged / failed
    reason: str = ""
    reparsed: bool = True
    compiles: bool = True
    idempotent: bool = True
    internal_error: bool = False


# Generous per-file time limit for the CLI passes: the default (120 s) cut off deepspeed's
# runtime/engine.py (47 s alone) on a loaded machine in one pass, which read as non-idempotent.
TIME_LIMIT = 900


def audit_file(path: str, all_files: bool = True) -> FileAudit:
    import libcst as cst

    from porter.engine.core import migrate_file, port_source
    from porter.engine.options import Options
    from porter.engine.results import Failure, Success

    options = Options(all_files=all_files)
    result = migrate_file(path, options)
    if isinstance(result, Failure):
        return FileAudit(path, "failed", result.reason, internal_error=result.kind == "internal")
    if not isinstance(result, Success):
        return FileAudit(path, "unchanged")
    reparsed = compiles = True
    try:
        cst.parse_module(result.new)
    except Exception:
        reparsed = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(result.old, path, "exec", dont_inherit=True)
            original_compiles = True
        except (SyntaxError, ValueError):
            original_compiles = False
        if original_compiles:
            try:
                compile(result.new, path, "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                compiles = False
    again = port_source(result.new, path, options)
    idempotent = not isinstance(again, Success)
    return FileAudit(path, "ported", reparsed=reparsed, compiles=compiles, idempotent=idempotent)


def _audit(args: tuple[str, bool]) -> FileAudit:
    return audit_file(*args)


def python_files(roots: list[Path]) -> list[str]:
    files: list[str] = []
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            files.extend(os.path.join(folder, name) for name in names if name.endswith(".py"))
    return sorted(files)


def default_roots() -> list[Path]:
    roots = []
    for package in ("torch", "transformers", "accelerate", "datasets"):
        spec = importlib.util.find_spec(package)
        if spec and spec.submodule_search_locations:
            roots.append(Path(list(spec.submodule_search_locations)[0]))
    roots += [ROOT / "samples", ROOT / "tests" / "fixtures"]
    return [root for root in roots if root.exists()]


def identical_when_unchanged(files: list[str], audits: list[FileAudit], roots: list[Path]) -> tuple[int, int]:
    """Run the real CLI with --out over each root; count unchanged files that came out byte-identical."""
    from porter.cli import main

    unchanged = {a.path for a in audits if a.status == "unchanged"}
    checked = same = 0
    for root in roots:
        with tempfile.TemporaryDirectory() as out:
            with open(os.devnull, "w") as sink:
                saved = sys.stdout, sys.stderr
                sys.stdout = sys.stderr = sink
                try:
                    main(["migrate", "-q", "--all", str(root), "--out", out, "--time-limit", str(TIME_LIMIT)])
                finally:
                    sys.stdout, sys.stderr = saved
            for path in files:
                if path in unchanged and path.startswith(str(root) + os.sep):
                    copy = Path(out) / os.path.relpath(path, root)
                    checked += 1
                    same += copy.exists() and copy.read_bytes() == Path(path).read_bytes()
    return checked, same


def _walk_all(root: Path) -> dict[str, Path]:
    """Every file and link below root (links not followed), by '/' relative path."""
    found: dict[str, Path] = {}
    for folder, dirs, names in os.walk(root):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder) / name
            found[os.path.relpath(path, root).replace(os.sep, "/")] = path
    return found


def faithful_copy(files: list, work: Path, style: str, jobs: int) -> dict[str, object]:
    """--out on a corpus copy with +x scripts and links: idempotency, modes, links, temp files."""
    import stat

    from corpus import facts, migrate, stage

    tree, out, again = work / style / "src", work / style / "out", work / style / "out2"
    stage(files, tree)
    for f in files:  # scripts are executables in a real checkout
        if facts(f.source.read_bytes(), f.key).script:
            (tree / f.project / f.rel).chmod(0o755)
    links: dict[str, str] = {}
    for project in sorted({f.project for f in files}):
        first = next(f for f in files if f.project == project and "/" in f.rel)
        for name, target in (("_link_to_file.py", first.rel), ("_link_to_dir", first.rel.rsplit("/", 1)[0])):
            os.symlink(target, tree / project / name)
            links[f"{project}/{name}"] = target
    started = time.perf_counter()
    exits = [migrate(tree, out, work / style / "r1.json", style, jobs)[0],
             migrate(out, again, work / style / "r2.json", style, jobs)[0]]
    elapsed = time.perf_counter() - started
    sources, outs, agains = _walk_all(tree), _walk_all(out), _walk_all(again)
    regular = {rel: p for rel, p in sources.items() if not p.is_symlink()}
    first_pass = {rel: p for rel, p in outs.items() if not p.is_symlink() and p.is_file()}
    changed_again = [rel for rel, p in first_pass.items()
                     if rel not in agains or agains[rel].is_symlink() or agains[rel].read_bytes() != p.read_bytes()]
    def mode(p: Path) -> int:
        return stat.S_IMODE(p.lstat().st_mode)
    modes_kept = [rel for rel, p in regular.items() if rel in outs and mode(outs[rel]) == mode(p)]
    executables = [rel for rel, p in regular.items() if mode(p) & 0o111]
    links_kept = [rel for rel, target in links.items()
                  if rel in outs and outs[rel].is_symlink() and os.readlink(outs[rel]) == target]
    temp_left = [str(p) for tree_files in (sources, outs, agains) for rel, p in tree_files.items() if ".porter-tmp" in rel]
    return {
        "style": style, "exits": exits, "seconds": elapsed,
        "idempotent": (len(first_pass) - len(changed_again), len(first_pass)), "not_idempotent": changed_again,
        "modes": (len(modes_kept), len(regular)), "modes_lost": sorted(set(regular) - set(modes_kept)),
        "executables": (sum(rel in modes_kept for rel in executables), len(executables)),
        "links": (len(links_kept), len(links)), "links_lost": sorted(set(links) - set(links_kept)),
        "temp_files_left": temp_left,
    }


def corpus_checks(files: list, jobs: int) -> bool:
    """Print the --out checks for both styles; True when all of them hold."""
    def pct(pair: tuple[int, int]) -> str:
        n, d = pair
        return f"{n}/{d} ({100.0 * n / d:.2f}%)" if d else "0/0"

    ok = True
    with tempfile.TemporaryDirectory(prefix="porter-safety-out-") as work:
        for style in ("neuron", "accelerator"):
            r = faithful_copy(files, Path(work), style, jobs)
            print(f"[{style}] migrate --out, then the output again ({r['seconds']:.1f}s, exits {r['exits']}):")
            print(f"  idempotent (second pass changes no byte): {pct(r['idempotent'])}")  # type: ignore[arg-type]
            print(f"  file modes kept under --out: {pct(r['modes'])}; executables still +x: {pct(r['executables'])}")  # type: ignore[arg-type]
            print(f"  symbolic links reproduced as links: {pct(r['links'])}")  # type: ignore[arg-type]
            print(f"  temp files (*.porter-tmp) left: {len(r['temp_files_left'])}")  # type: ignore[arg-type]
            for label in ("not_idempotent", "modes_lost", "links_lost", "temp_files_left"):
                for item in list(r[label])[:15]:  # type: ignore[call-overload]
                    print(f"    {label}: {item}")
                ok = ok and not r[label]
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="*", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=int, default=0, help="audit at most N files (0: all)")
    parser.add_argument("--no-identity", action="store_true", help="skip the --out byte-identity pass")
    parser.add_argument("--default-scope", action="store_true", help="performance rules only on ported files")
    parser.add_argument("--corpus", action="store_true", help="audit the real-world corpus of bench/corpus.py")
    parser.add_argument("--slice", action="store_true", help="with --corpus: only the corpus's fast slice")
    args = parser.parse_args()
    corpus_files: list = []
    if args.corpus:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from corpus import CorpusError, build, stage

        try:
            corpus_files = build(args.slice)
            if args.limit:  # an evenly spread sample, the same on every run
                step = max(1, len(corpus_files) // args.limit)
                corpus_files = corpus_files[::step][: args.limit]
        except CorpusError as error:
            print(f"corpus: {error}", file=sys.stderr)
            return 2
        corpus_tree = tempfile.TemporaryDirectory(prefix="porter-safety-corpus-")
        stage(corpus_files, Path(corpus_tree.name))
        args.roots = [Path(corpus_tree.name)]
    roots = args.roots or default_roots()
    files = python_files(roots)
    if args.limit:
        files = files[: args.limit]
    started = time.perf_counter()
    # Load the engine and rules here: forked workers (and their replacements) then all run the
    # code as it was when the audit started, even if the working tree is edited meanwhile.
    import porter.engine.core  # noqa: F401
    from porter.engine.registry import all_rules

    all_rules()
    with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=200) as pool:
        audits = pool.map(_audit, [(path, not args.default_scope) for path in files], chunksize=16)
    elapsed = time.perf_counter() - started
    ported = [a for a in audits if a.status == "ported"]
    failed = [a for a in audits if a.status == "failed"]
    reasons = collections.Counter(a.reason.split(":")[0] for a in failed)
    print(f"corpora: {', '.join(str(r) for r in roots)}")
    print(f"files tried: {len(audits)} in {elapsed:.1f}s with {args.jobs} processes")
    print(f"ported: {len(ported)}  unchanged: {sum(a.status == 'unchanged' for a in audits)}  failed: {len(failed)}")
    for reason, count in reasons.most_common():
        print(f"  failed because {reason}: {count}")
    crashes = [a for a in audits if a.internal_error]
    print(f"crashes (internal errors): {len(crashes)}")
    for crash in crashes[:20]:
        print(f"  {crash.path}: {crash.reason}")
    def pct(n: int, d: int) -> str:
        return f"{n}/{d} ({100.0 * n / d:.2f}%)" if d else "0/0"
    print(f"outputs that re-parse: {pct(sum(a.reparsed for a in ported), len(ported))}")
    print(f"outputs that compile (where the original did): {pct(sum(a.compiles for a in ported), len(ported))}")
    print(f"idempotent (second port changes nothing): {pct(sum(a.idempotent for a in ported), len(ported))}")
    for bad in [a for a in ported if not (a.reparsed and a.compiles and a.idempotent)][:20]:
        print(f"  NOT SAFE: {bad.path} reparsed={bad.reparsed} compiles={bad.compiles} idempotent={bad.idempotent}")
    if not args.no_identity:
        checked, same = identical_when_unchanged(files, audits, roots)
        print(f"unchanged files byte-identical after migrate --out: {pct(same, checked)}")
    unsafe = crashes or any(not (a.reparsed and a.compiles and a.idempotent) for a in ported)
    if args.corpus:
        unsafe = not corpus_checks(corpus_files, args.jobs) or unsafe
    return 1 if unsafe else 0


if __name__ == "__main__":
    sys.exit(main())
