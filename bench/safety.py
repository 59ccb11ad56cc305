"""Safety audit: port large real corpora and prove porter never damages code.

Not a test (it takes minutes); prints figures. For each Python file of the corpora:
  * the port runs without crashing (a Failure for unparseable input is fine, an internal error is not);
  * every ported file re-parses (libcst) and compiles (CPython) when the original compiled;
  * porting the ported file again changes nothing (idempotency);
  * files with nothing to port come out of ``porter migrate --out`` byte-identical.

Usage: python bench/safety.py [--jobs N] [--limit N] [--all-files] [DIR ...]
Default corpora: the installed torch, transformers, accelerate and datasets packages, plus
samples/ and tests/fixtures/ of this repository.
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
from dataclasses import dataclass, field
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
                    main(["migrate", "-q", "--all", str(root), "--out", out])
                finally:
                    sys.stdout, sys.stderr = saved
            for path in files:
                if path in unchanged and path.startswith(str(root) + os.sep):
                    copy = Path(out) / os.path.relpath(path, root)
                    checked += 1
                    same += copy.exists() and copy.read_bytes() == Path(path).read_bytes()
    return checked, same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="*", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=int, default=0, help="audit at most N files (0: all)")
    parser.add_argument("--no-identity", action="store_true", help="skip the --out byte-identity pass")
    parser.add_argument("--default-scope", action="store_true", help="performance rules only on ported files")
    args = parser.parse_args()
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
    return 1 if unsafe else 0


if __name__ == "__main__":
    sys.exit(main())
