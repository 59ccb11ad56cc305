"""The import-reference count that replaces libcst's scope analysis for unused-import removal
(``porter.engine.imports._ReferenceCount``): wherever it answers, it finds every access libcst's
``ScopeProvider`` finds (it may find more: that only keeps an import), on every fixture and sample."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, QualifiedNameProvider, ScopeProvider

from porter.engine.fastcst.names import LazyQualifiedNames
from porter.engine.fastcst.walk import TreeIndex
from porter.engine.imports import _ReferenceCount

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(ROOT.joinpath("samples").rglob("*.py")) + sorted(ROOT.joinpath("tests", "fixtures").rglob("*.in.py"))

EXTRA = [
    "from m import amp\nimport typing\nf(amp=1)\nx.amp\ndef g(a: 'amp.X'): pass\ny: typing.List['amp'] = 1\nz = 'amp'\ndel amp\n",
    "try:\n    from apex import amp\nexcept ImportError:\n    amp = None\nm, o = amp.initialize(m, o)\n",
    "from torch.cuda.amp import GradScaler\ns = GradScaler()\ncast('GradScaler', s)\n",
    "from m import X\nimport typing\nT = typing.TypeVar(\"T\", \"X\")\nv: typing.List[\"X\"] = []\nw = List[\"X\"]\nhasattr(m, \"X\")\n",
    "from m import a\na += 1\nfor a in b: pass\n[a for a in c]\n",
    # imports in a function body: the function's own reads after them and every nested scope's
    "def f():\n    import torch_xla.core.xla_model as xm\n    xm.mark_step()\n    g = lambda: xm.x\n"
    "    [xm for _ in r]\n    def h(): return xm.y\n    class C:\n        z = xm\n    return 'xm'\nxm = 1\nxm.z\n",
    "import os\ndef f():\n    os.getcwd()\n    import os\n    return os.path\n",
    "def f(fast):\n    if fast:\n        from a import b\n    else:\n        from c import b\n    return b()\n",
    "def f():\n    from m import X\n    v: 'X' = 1\n    return v\ndef g() -> 'X': pass\n",
    "class K:\n    def m(self):\n        from torch.cuda import amp\n        return amp.autocast()\n",
]


def _modules() -> list[cst.Module]:
    found = [cst.parse_module(text) for text in EXTRA]
    for path in SOURCES:
        try:
            found.append(cst.parse_module(path.read_bytes()))
        except Exception:  # noqa: BLE001 - fixtures of unparseable input
            continue
    return found


def _bound(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None:
        return alias.asname.name.value if isinstance(alias.asname.name, cst.Name) else None
    name = alias.name
    while isinstance(name, cst.Attribute):
        name = name.value  # type: ignore[assignment]
    return name.value if isinstance(name, cst.Name) else None


@pytest.mark.corpus  # a sweep over every fixture and sample: out of the fast loop, still in CI
def test_reference_count_covers_libcst_accesses() -> None:
    answered = 0
    for module in _modules():
        tree = TreeIndex(module)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        names = LazyQualifiedNames(tree, lambda wrapper=wrapper: wrapper.resolve(QualifiedNameProvider))  # type: ignore[arg-type]
        counted = _ReferenceCount(tree, names)
        scopes = None
        for node in tree.preorder:
            if not isinstance(node, (cst.Import, cst.ImportFrom)) or isinstance(node.names, cst.ImportStar):
                continue
            for alias in node.names:
                bound = _bound(alias)
                if bound is None:
                    continue
                ours = counted.references(bound, node)
                if ours is None:
                    continue
                if scopes is None:
                    scopes = wrapper.resolve(ScopeProvider)
                scope = scopes.get(node)
                if scope is None:
                    continue
                theirs = {
                    id(access.node)
                    for assignment in scope.assignments[bound]
                    if getattr(assignment, "node", None) is node
                    for access in assignment.references
                }
                missing = theirs - {id(reference) for reference in ours}
                assert not missing, (module.code_for_node(node), bound)
                answered += 1
    assert answered > 200


def test_still_read_entering_only_the_rebuilt_nodes_answers_as_a_whole_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """``still_read`` with the original's index skips the kept subtrees that held none of the names:
    on every fixture and sample that drops an import, the same names as a walk of the whole module."""
    from porter.engine import core, imports
    from porter.engine.options import Options

    asked = []
    real = imports.still_read

    def both(module: cst.Module, specs, tree=None):  # type: ignore[no-untyped-def]
        specs = list(specs)
        fast = real(module, specs, tree)
        assert tree is not None and fast == real(module, specs)
        asked.append(fast)
        return fast

    monkeypatch.setattr(core, "still_read", both)
    for path in SOURCES:
        core.port_source(path.read_bytes(), str(path), Options(all_files=True))
    assert len(asked) > 20 and any(asked)  # many drops, and some imports an edit spelled again
