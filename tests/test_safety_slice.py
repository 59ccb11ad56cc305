"""A CI-sized slice of bench/safety.py: real corpora ported with every rule on every file.

Each file must port without an internal error; every ported file must re-parse, compile where
the original did, and port to itself (idempotency). The full audit (all of torch, transformers,
accelerate and datasets) is `python bench/safety.py`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from safety import audit_file  # noqa: E402

pytestmark = pytest.mark.corpus


def _slice() -> list[str]:
    files = sorted(str(p) for p in (ROOT / "samples").rglob("*.py"))
    files += sorted(str(p) for p in (ROOT / "tests" / "fixtures").rglob("*.py"))
    for package, limit in (("torch", 40), ("accelerate", 15)):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        base = Path(list(spec.submodule_search_locations)[0])
        # Deterministic: the library's own files that mention CUDA, so rules really act on them.
        hits = []
        for folder, _, names in sorted(os.walk(base)):
            for name in sorted(names):
                path = os.path.join(folder, name)
                if name.endswith(".py") and os.path.getsize(path) < 200_000:
                    with open(path, "rb") as handle:
                        if b"torch.cuda." in handle.read():
                            hits.append(path)
        files += hits[:: max(1, len(hits) // limit)][:limit]
    return files


FILES = _slice()


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(p, "/") for p in FILES])
def test_port_is_safe(path: str) -> None:
    audit = audit_file(path, all_files=True)
    assert not audit.internal_error, audit.reason
    assert audit.reparsed, "ported output does not re-parse"
    assert audit.compiles, "ported output does not compile"
    assert audit.idempotent, "porting the output again changes it"
