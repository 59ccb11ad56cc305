"""Batch throughput: porter on a large real tree vs bare libcst parse + codegen of the same files.

    python bench/batch.py [--tree DIR] [-j N] [--every N | --first N] [--without-prefilter] [--per-file-every N] [--keep DIR]

Default tree: the installed transformers package source (about 2,900 files). In one run it
measures, with the same number of processes:

* bare: ``libcst.parse_module(data).code`` for every ``.py`` file (a process pool of N);
* cold: ``porter migrate TREE --out TMP -jN`` with an empty cache (subprocess, wall time);
* warm: the same command again (every file served by the content cache), and ``--check`` warm;
* with ``--without-prefilter``: a cold ``--check`` run with the prefilter off;
* the files the cold run changed and their share of the tree's bytes (a floor for cold: each is
  parsed and printed by libcst);
* the prefilter: how many files pass the trigger words, how many of those reach libcst (the
  rules' checks on CPython's tree, ``porter.engine.astcheck``), which rules' triggers let most through;
* per file that reaches libcst (in this process, one file at a time): porter's whole pipeline (``port_source``)
  in units of that file's own bare parse + codegen — median, p95, max and the five slowest files;
  both with the options the cold run gives each file (a tree with a CUDA-ism somewhere is a
  repository being ported: ``repo_in_port``, the performance rules on every file);
* ``torchfix -jN --fix`` on a copy of the tree when a ``torchfix`` executable is on PATH.

``--first 800`` takes the first 800 files (sorted paths) of the tree: the slice the batch-speed
targets are stated on. Prints numbers; not a test. Targets: cold <= 0.6x bare on that slice and
<= 0.5x on the whole transformers tree, warm >= 50x faster than cold, and per parsed file <= 2x a
bare parse + codegen (median and p95).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from multiprocessing import Pool
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from porter.engine.options import Options


def _bare(path: str) -> int:
    import libcst as cst

    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return len(cst.parse_module(data).code)
    except Exception:  # noqa: BLE001 - a file libcst cannot parse costs what it cost
        return 0


def bare_parse(files: list[str], jobs: int) -> float:
    started = time.perf_counter()
    with Pool(jobs) as pool:
        for _ in pool.imap_unordered(_bare, files, chunksize=16):
            pass
    return time.perf_counter() - started


def porter(args: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    # Run from a neutral folder: `python -m` puts the current folder first on sys.path, and a
    # porter checkout there would shadow the frozen copy the workers run.
    done = subprocess.run([sys.executable, "-m", "porter", "migrate", *args], capture_output=True, text=True, cwd=tempfile.gettempdir())
    elapsed = time.perf_counter() - started
    summary = (done.stderr.strip().splitlines() or ["?"])[-1]
    return elapsed, f"exit {done.returncode}: {summary}"


def cli_options(files: list[str]) -> Options:
    """The engine options ``porter migrate TREE`` gives each Python file of the tree: a tree with a
    CUDA-ism in some file is a repository being ported (``repo_in_port``: the performance rules
    run on every file), as in ``porter.run.migrate``."""
    from porter.engine.options import Options
    from porter.run.migrate import _PORTED_REPO

    for path in files:
        with open(path, "rb") as handle:
            if _PORTED_REPO.search(handle.read()):
                return Options(repo_in_port=True)
    return Options()


def _reaches_libcst(text: str, options: Options, candidates: list) -> bool:  # type: ignore[type-arg]
    """The engine's second stage (``porter.engine.astcheck``): some candidate's check admits it."""
    import ast

    from porter.engine.astcheck import admitted

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return admitted(text, tree, options, candidates)


def prefilter_stats(files: list[str], options: Options) -> tuple[int, int, Counter[str], Counter[str]]:
    from porter.engine.core import prefilter
    from porter.engine.registry import all_rules

    rules = all_rules()
    passed = parsed = 0
    by_rule: Counter[str] = Counter()
    by_word: Counter[str] = Counter()
    for path in files:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
        # The engine's own decision (port-context rules count only beside a porting rule).
        candidates = prefilter(text, options, rules)
        for rule in candidates:
            by_rule[f"{rule.code} {rule.name}"] += 1
            for word in rule.triggers:
                if word in text:
                    by_word[f"{rule.code} {word!r}"] += 1
            if rule.trigger_pattern:
                by_word[f"{rule.code} pattern"] += 1
        passed += bool(candidates)
        parsed += bool(candidates) and _reaches_libcst(text, options, candidates)
    return passed, parsed, by_rule, by_word


def per_file_costs(files: list[str], options: Options, every: int = 1, checked: bool = False) -> list[tuple[float, str, float]]:
    """(porter / bare, path, porter seconds) for every file (every ``every``-th) that reaches
    libcst, measured one after the other in this process (each timing the best of two runs),
    with the options the cold run gives the file (the project modules it imports listed, and
    parsed afresh in each timed port: the worst case, where no earlier file asked for them). ``checked``: the files the prefilter passes but
    no rule's check admits (``porter.engine.astcheck``) instead: what the second stage costs."""
    import libcst as cst

    from porter.engine.core import port_source, prefilter
    from porter.engine.imported import forget as forget_trees
    from porter.engine.registry import all_rules
    from porter.run.local_imports import with_local_imports

    rules = all_rules()
    costs = []
    parsed = 0
    for path in files:
        with open(path, "rb") as handle:
            data = handle.read()
        text = data.decode("utf-8", "replace")
        candidates = prefilter(text, options, rules)
        if not candidates or _reaches_libcst(text, options, candidates) == checked:
            continue
        parsed += 1
        if (parsed - 1) % every:
            continue
        bare = porter_time = float("inf")
        for _ in range(2):
            started = time.perf_counter()
            try:
                cst.parse_module(data).code  # noqa: B018 - the codegen is what is timed
            except Exception:  # noqa: BLE001
                break
            bare = min(bare, time.perf_counter() - started)
            forget_trees()
            started = time.perf_counter()
            port_source(data, path, with_local_imports(options, path, data))
            porter_time = min(porter_time, time.perf_counter() - started)
        if bare != float("inf"):
            costs.append((porter_time / bare, path, porter_time))
    return sorted(costs, reverse=True)


def changed_share(files: list[str], tree: str, out: str) -> tuple[int, int, int]:
    """(files the port changed, their bytes, the tree's bytes): a changed file is one whose copy in
    ``out`` (the cold run's output) differs from the tree's."""
    changed = changed_bytes = total = 0
    for path in files:
        with open(path, "rb") as handle:
            data = handle.read()
        total += len(data)
        ported = os.path.join(out, os.path.relpath(path, tree))
        if os.path.exists(ported):
            with open(ported, "rb") as handle:
                if handle.read() != data:
                    changed += 1
                    changed_bytes += len(data)
    return changed, changed_bytes, max(total, 1)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def import_time(module: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        best = min(best, time.perf_counter() - started)
    return best


def snapshot(work: str) -> str:
    """A frozen copy of porter (with its rules as porter.rules) that edits to the tree cannot touch.

    Cold and warm runs must use the same rule code, or the warm run is a cold one again. It is
    byte-compiled as pip compiles an installed package: with PYTHONDONTWRITEBYTECODE set (as on
    this machine) every porter process would otherwise compile porter's own sources at start-up.
    """
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frozen = os.path.join(work, "src")
    shutil.copytree(os.path.join(repo, "porter"), os.path.join(frozen, "porter"), ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(repo, "rules"), os.path.join(frozen, "porter", "rules"), ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(frozen, quiet=1)
    return frozen


def subset(files: list[str], tree: str, into: str) -> tuple[list[str], str]:
    """Copy ``files`` (below ``tree``) into ``into``, keeping their relative paths."""
    copied = []
    for path in files:
        target = os.path.join(into, os.path.relpath(path, tree))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(path, target)
        copied.append(target)
    return copied, into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", help="tree to port (default: the installed transformers package)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--keep", help="keep the ported copy here instead of a temporary folder")
    parser.add_argument("--every", type=int, default=1, help="port every Nth file only (a smaller tree, same mix)")
    parser.add_argument("--first", type=int, default=0, help="port the first N files (sorted paths) only, e.g. 800")
    parser.add_argument("--without-prefilter", action="store_true", help="also time a run with the prefilter off (slow)")
    parser.add_argument("--per-file-every", type=int, default=1, metavar="N",
                        help="per-file costs on every Nth parsed file only (a loaded machine; 0: skip them)")
    args = parser.parse_args()
    if args.tree is None:
        import transformers

        args.tree = os.path.dirname(transformers.__file__)
    work = tempfile.mkdtemp(prefix="porter-bench-")
    files = sorted(
        os.path.join(folder, name)
        for folder, _, names in os.walk(args.tree)
        for name in names
        if name.endswith(".py") and "__pycache__" not in folder
    )
    if args.every > 1 or args.first:
        chosen = files[: args.first] if args.first else files[:: args.every]
        files, args.tree = subset(chosen, args.tree, os.path.join(work, "tree"))
    lines = sum(open(path, "rb").read().count(b"\n") for path in files)
    print(f"tree: {args.tree}: {len(files)} .py files, {lines:,} lines; {args.jobs} processes; load {os.getloadavg()[0]:.1f}")

    frozen = snapshot(work)
    os.environ["PYTHONPATH"] = frozen + os.pathsep + os.environ.get("PYTHONPATH", "")
    sys.path.insert(0, frozen)
    out = args.keep or os.path.join(work, "out")
    cache = os.path.join(work, "cache")
    try:
        bare = bare_parse(files, args.jobs)
        print(f"bare libcst parse+codegen: {bare:7.2f} s  {len(files) / bare:7.1f} files/s")
        common = [args.tree, "-q", "--no-diff", "--no-progress", f"-j{args.jobs}", "--cache-dir", cache]
        cold, cold_line = porter([*common, "--out", out])
        print(f"porter cold (--out):       {cold:7.2f} s  {len(files) / cold:7.1f} files/s  = {cold / bare:.2f}x bare   [{cold_line}]")
        warm, warm_line = porter([*common, "--out", out])
        print(f"porter warm (--out):       {warm:7.2f} s  {len(files) / warm:7.1f} files/s  cold/warm = {cold / warm:.1f}x   [{warm_line}]")
        check, check_line = porter([*common, "--check"])
        print(f"porter warm (--check):     {check:7.2f} s  {len(files) / check:7.1f} files/s  cold/warm = {cold / check:.1f}x   [{check_line}]")
        if args.without_prefilter:
            off, off_line = porter([*common, "--no-cache", "--no-prefilter", "--check"])
            print(f"porter, no prefilter:      {off:7.2f} s  = {off / bare:.2f}x bare   [{off_line}]")
        options = cli_options(files)
        passed, parsed, by_rule, by_word = prefilter_stats(files, options)
        in_port = " (a repository being ported: the performance rules run on every file)" if options.repo_in_port else ""
        print(f"prefilter: {passed}/{len(files)} files pass the trigger words ({100 * passed / len(files):.1f}%){in_port}; "
              f"{parsed} of them reach libcst (the rest: no rule's check admits them on CPython's tree)")
        changed, changed_bytes, total_bytes = changed_share(files, args.tree, out)
        print(f"files the cold run changed: {changed} ({100 * changed_bytes / total_bytes:.1f}% of the tree's bytes): each is parsed "
              f"and printed by libcst, so cold cannot go below about {changed_bytes / total_bytes:.2f}x bare (bare time goes "
              "roughly with bytes) even at one bare parse+codegen per changed file and nothing else")
        print("  rules letting most files through:", ", ".join(f"{name} {count}" for name, count in by_rule.most_common(6)))
        print("  trigger words:", ", ".join(f"{word} {count}" for word, count in by_word.most_common(8)))
        costs = per_file_costs(files, options, args.per_file_every) if args.per_file_every > 0 else []
        if costs:
            ratios = [ratio for ratio, _, _ in costs]
            every = f", every {args.per_file_every}th" if args.per_file_every > 1 else ""
            print(f"per parsed file, porter / bare parse+codegen ({len(costs)} files{every}): median {_percentile(ratios, 0.5):.2f}x, "
                  f"p95 {_percentile(ratios, 0.95):.2f}x, max {ratios[0]:.2f}x")
            for ratio, path, took in costs[:5]:
                print(f"  {ratio:6.2f}x  {took:6.3f} s  {os.path.relpath(path, args.tree)}")
            gated = per_file_costs(files, options, args.per_file_every, checked=True)
            if gated:
                ratios = [ratio for ratio, _, _ in gated]
                print(f"files the checks keep from libcst, porter / bare ({len(gated)} files{every}): median {_percentile(ratios, 0.5):.2f}x, "
                      f"max {ratios[0]:.2f}x")
        print(f"import porter.commands.migrate: {import_time('porter.commands.migrate'):.3f} s; "
              f"import porter.cli: {import_time('porter.cli'):.3f} s; import porter.engine.core: {import_time('porter.engine.core'):.3f} s")
        torchfix = shutil.which("torchfix")
        if torchfix:
            copy = os.path.join(work, "torchfix")
            shutil.copytree(args.tree, copy)
            started = time.perf_counter()
            subprocess.run([torchfix, f"-j{args.jobs}", "--fix", copy], capture_output=True)
            took = time.perf_counter() - started
            print(f"torchfix --fix:            {took:7.2f} s  = {took / bare:.2f}x bare")
        else:
            print("torchfix: not on PATH (it pins an older libcst; install it in its own environment to compare)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
