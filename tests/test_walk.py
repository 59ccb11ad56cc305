"""porter.engine.fastcst.walk (the engine's one-pass index and hook dispatch), porter.engine.fastcst.names (qualified names on
demand) and porter.engine.fastcst.positions (positions per statement) must agree with the libcst providers they
replace: ParentNodeProvider / ``node.children`` / a batched visit, QualifiedNameProvider (the
IMPORT names rules match), PositionProvider."""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, QualifiedNameProvider
from libcst.metadata import QualifiedNameSource as Source

from porter.engine.fastcst.names import LazyQualifiedNames, star_exports
from porter.engine.fastcst.positions import StatementPositions
from porter.engine.fastcst.walk import TreeIndex, dispatch

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(ROOT.joinpath("samples").rglob("*.py")) + sorted(ROOT.joinpath("tests", "fixtures").rglob("*.in.py"))


def _parsed(path: Path) -> cst.Module | None:
    try:
        return cst.parse_module(path.read_bytes())
    except Exception:  # noqa: BLE001 - fixtures of unparseable input
        return None


def _parsed_first(count: int) -> list[tuple[Path, cst.Module]]:
    found: list[tuple[Path, cst.Module]] = []
    for path in SOURCES:
        if len(found) == count:
            break
        if (module := _parsed(path)) is not None:
            found.append((path, module))
    return found


@functools.cache
def _modules() -> list[tuple[Path, cst.Module]]:
    """Every sample and fixture input, parsed once, on first use (not at collection: the sweeps
    that read them all are out of the fast loop)."""
    return [(path, module) for path in SOURCES if (module := _parsed(path)) is not None]


def _imported(names: object) -> set[str]:
    value = names() if callable(names) else names
    return {q.name for q in value if q.source is Source.IMPORT}  # type: ignore[union-attr]


@pytest.mark.corpus  # a sweep over every fixture and sample: out of the fast loop, still in CI
def test_index_matches_children_and_parent_provider() -> None:
    assert len(_modules()) > 100
    for path, module in _modules():
        index = TreeIndex(module)
        assert dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(ParentNodeProvider)) == index.parents, path
        for node in index.preorder:
            assert index.children.get(node, []) == list(node.children), (path, type(node).__name__)


def _same_index(derived: TreeIndex, fresh: TreeIndex) -> bool:
    """The same pre-order, and the same parent and children of every node in it."""
    return (
        len(derived.preorder) == len(fresh.preorder)
        and all(a is b for a, b in zip(derived.preorder, fresh.preorder))
        and all(derived.parents.get(node) is fresh.parents.get(node) for node in fresh.preorder)
        and all(derived.children.get(node, []) == fresh.children.get(node, []) for node in fresh.preorder)
    )


@pytest.mark.parametrize("twice", [False, True])
def test_derived_index_is_the_fresh_index_of_the_ported_tree(twice: bool) -> None:
    """The index of a ported tree built from the original's (kept subtrees not walked again) is the
    index a fresh walk builds; also with an original node in the tree twice (a statement inserted
    before the line that holds it, reusing it)."""
    from porter.engine.core import _EditApplier
    from porter.engine.rule import Edit

    for path, module in _parsed_first(60):
        original = TreeIndex(module)
        calls = [node for node in original.preorder if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)][::3]
        edits: list[Edit] = []
        for call in calls:
            if twice:
                line: cst.CSTNode | None = call
                while line is not None and not isinstance(line, cst.SimpleStatementLine):
                    line = original.parents.get(line)
                if line is None:  # a call in a compound statement's header
                    continue
                edits.append(Edit(target=line, code="T", order=(0, "T"), before=[cst.SimpleStatementLine([cst.Expr(call)])]))  # type: ignore[arg-type]
            else:
                rename = lambda node: node.with_changes(func=node.func.with_changes(attr=cst.Name("neuron")))  # type: ignore[attr-defined]  # noqa: E731
                edits.append(Edit(target=call, code="T", order=(0, "T"), transform=rename))
        if edits:
            ported = module.visit(_EditApplier(edits, original.parents))
            assert _same_index(TreeIndex.derived(ported, original), TreeIndex(ported)), path


class _Recorder(cst.BatchableCSTVisitor):
    def __init__(self, events: list[tuple[str, int]]) -> None:
        super().__init__()
        self.events = events

    def visit_Call(self, node: cst.Call) -> None:
        self.events.append(("visit_Call", id(node)))

    def leave_Call(self, original_node: cst.Call) -> None:
        self.events.append(("leave_Call", id(original_node)))

    def visit_Name(self, node: cst.Name) -> None:
        self.events.append(("visit_Name", id(node)))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.events.append(("leave_FunctionDef", id(original_node)))


def test_dispatch_calls_hooks_in_libcst_order() -> None:
    for path, module in _parsed_first(40):
        ours: list[tuple[str, int]] = []
        theirs: list[tuple[str, int]] = []
        dispatch(TreeIndex(module), [_Recorder(ours)])
        MetadataWrapper(module, unsafe_skip_copy=True).visit_batched([_Recorder(theirs)])
        assert ours == theirs, path


def test_dispatch_refuses_attribute_hooks() -> None:
    class Attr(cst.BatchableCSTVisitor):
        def visit_Call_func(self, node: cst.Call) -> None:
            pass

    with pytest.raises(TypeError, match="visit_Call_func"):
        dispatch(TreeIndex(cst.parse_module("f()\n")), [Attr()])


def _compare_names(module: cst.Module) -> tuple[int, bool]:
    index = TreeIndex(module)
    reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
    names = LazyQualifiedNames(index, lambda: reference)
    # libcst resolves no star import: names a torch star import binds are checked by test_star_imports.
    starred = set().union(*(star_exports(node) for node in index.preorder if isinstance(node, cst.ImportFrom)))
    compared = 0
    for node in index.preorder:
        if isinstance(node, (cst.Name, cst.Attribute, cst.Call)):
            head = (cst.helpers.get_full_name_for_node(node.func if isinstance(node, cst.Call) else node) or "").split(".")[0]
            if head in starred:
                continue
            expected = _imported(reference.get(node, set()))
            assert _imported(names[node]) == expected, module.code_for_node(node)
            compared += 1
    return compared, names.used_fallback


@pytest.mark.corpus  # a sweep over every fixture and sample: out of the fast loop, still in CI
def test_imported_names_match_libcst_on_fixtures_and_samples() -> None:
    compared = sum(_compare_names(module)[0] for _, module in _modules())
    assert compared > 10_000


SHADOWING = {
    "plain": ("import torch\nimport torch.nn as nn\nfrom torch.cuda import amp as a\ntorch.cuda.synchronize()\n"
              "m = nn.Linear(1, 1)\nwith a.autocast():\n    pass\n", False),
    "try_except_fallback": ("try:\n    import torch\nexcept ImportError:\n    torch = None\n"
                            "torch.cuda.synchronize()\n", False),
    "function_import": ("def f():\n    import numpy as np\n    return np.zeros(1)\n"
                        "import jax.numpy as np\nnp.ones(1)\n", False),
    "class_body_import": ("class C:\n    import torch as t\n    x = t.zeros(1)\n    y = [t.ones(1) for _ in range(2)]\n"
                          "    def m(self):\n        return t.cuda\n", False),
    "parameter_shadow": ("import torch\ndef f(torch):\n    return torch.cuda.synchronize()\ntorch.cuda.synchronize()\n", False),
    "method_name_shadow": ("from m import init\nclass C:\n    def init(self):\n        init.normal_()\n    x = init\n", False),
    "local_shadow_handlers": ("import os\ndef f():\n    try:\n        pass\n    except E as os:\n        os.x\n"
                              "    for os in y: os.z\n    os.path\ndef g(): os.path\n", False),
    "comprehension_in_class_body": ("import torch.nn as nn\nclass C:\n    y = [0 for _ in nn.a]\n    def nn(self): nn.b\n", True),
    "global_shadow": ("import torch\ndef f():\n    global torch\n    torch = 1\ntorch.cuda.is_available()\n", True),
    "dotted_imports": ("import torch.distributed as dist\nimport torch.cuda\nimport os.path\n"
                       "dist.init_process_group('nccl')\ntorch.cuda.current_device()\nos.path.join('a')\nos.getcwd()\n", False),
    "relative": ("from . import utils\nfrom ..pkg import thing as t\nutils.x()\nt.y\n", False),
    "branch_imports_access_order": ("def f(hpu):\n    if hpu:\n        import intel_te as te\n        te.x = 1\n"
                                    "    else:\n        import te.pytorch as te\n    return te.Linear\n", False),
    "parameter_annotation": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torch.pkg import P\n"
                             "def f(p: P | None = None):\n    from .pkg import P\n    return P()\n", False),
    # A function both imports a name and assigns it (image loaders, optional kernels): libcst's order rules.
    "function_imports_then_wraps": ("from functools import partial\ndef load(b, fast):\n    if fast:\n"
                                    "        from torchcodec.decoders import decode_image\n    else:\n"
                                    "        from torchvision.io import decode_image\n"
                                    "    decode_image = partial(decode_image, exif=True)\n    return decode_image(b)\n", False),
    "function_import_or_getattr": ("import torch\ndef kernels(kernel):\n    if kernel is None:\n"
                                   "        from flash_attn import flash_attn_func, flash_attn_varlen_func\n    else:\n"
                                   "        flash_attn_varlen_func = getattr(kernel, 'varlen', None)\n"
                                   "    if flash_attn_varlen_func is None:\n        return torch.cuda.current_device()\n"
                                   "    return flash_attn_varlen_func, flash_attn_func\n", False),
    "read_before_function_import": ("from torch import cuda\ndef f():\n    cuda.synchronize()\n    if cuda:\n"
                                    "        from torch.cuda import amp as cuda\n    else:\n        cuda = None\n"
                                    "    return cuda.autocast()\n", False),
    "nested_reads_mixed_scope": ("def outer():\n    try:\n        from apex import amp\n    except ImportError:\n"
                                 "        amp = None\n    def inner():\n        return amp.initialize(1)\n    return inner, amp\n", False),
    "class_body_imports_then_assigns": ("class K:\n    try:\n        from torch.cuda import amp\n    except ImportError:\n"
                                        "        amp = None\n    scaler = amp.GradScaler()\n    amp = amp or 1\n    x = amp\n", False),
    "walrus_inside_rebinding": ("def f(g):\n    from torch import cuda\n    cuda = [(n := 1), cuda.x]\n    return cuda\n", True),
    "mixed_scope_with_parameter": ("def f(amp):\n    if amp is None:\n        from torch.cuda import amp\n"
                                   "    return amp.autocast()\n", True),
    "def_fallback": ("try:\n    from torch import compile\nexcept ImportError:\n    def compile(f):\n        return f\n"
                     "compile(g)\n", False),
    # Read in a comprehension's or lambda's own scope: every binding of the nearest scope binding it, in any order.
    "comprehension_reads_function_local": ("import socket\ndef f(n):\n    socket = make()\n"
                                           "    return [g(socket, i, socket.x) for i in range(n) if socket]\n", False),
    "comprehension_reads_function_mixed": ("def f(fast, xs):\n    if fast:\n        from torch.cuda import amp\n    else:\n"
                                           "        amp = None\n    return [amp.autocast() for _ in xs], {k: amp for k in xs}\n", False),
    "lambda_reads_before_function_import": ("import amp\ndef f():\n    g = lambda: amp.autocast()\n"
                                            "    from torch.cuda import amp\n    amp = amp or 1\n    return g\n", False),
    "nested_comprehension_reads_class_method_local": ("from torch import cuda\nclass C:\n    def m(self, xs):\n"
                                                      "        cuda = self.x\n        return [[cuda.y for _ in x] for x in xs]\n", False),
    "comprehension_first_iterable_in_function": ("import os\ndef f():\n    r = [x for x in os.listdir()]\n    os = 1\n", True),
    "lambda_default_in_function": ("def f():\n    from a import b\n    h = lambda x=b.c: x\n    b = 2\n    return h\n", True),
    # An imported name a comprehension's target or a lambda's parameter binds (dataclasses' field, and
    # `for field in fields(self)` in one method): only its own scope sees that binding.
    "comprehension_target_shadows_import": ("from dataclasses import dataclass, field, fields\n@dataclass\nclass A:\n"
                                            "    x: int = field(default=1)\n    def d(self):\n"
                                            "        return {field.name: 1 for field in fields(self) if field.init}\n"
                                            "y = field(default=2)\n", False),
    "lambda_parameter_shadows_import": ("import torch\nf = lambda torch: torch.cuda\ng = torch.cuda.is_available\n"
                                        "h = [torch.x for torch in (1,)]\n", False),
    "comprehension_target_first_iterable": ("import os\nr = [os for os in os.listdir()]\n", True),
    "nested_comprehension_rebinds": ("import a\nr = [[a.y for a in x] for x in a.z]\ns = a.w\n", False),
}


@pytest.mark.parametrize("case", sorted(SHADOWING))
def test_imported_names_match_libcst_when_names_are_rebound(case: str) -> None:
    source, falls_back = SHADOWING[case]
    compared, used_fallback = _compare_names(cst.parse_module(source))
    assert compared and used_fallback is falls_back


STAR_SOURCE = """from torch import *
from torch.cuda import *
from somepkg.utils import *
x = GradScaler()
is_available()
amp.autocast()
cuda.is_available()
float16
def f(autocast, synchronize=None):
    return autocast(), synchronize()
helper()
DataParallel
"""


def test_star_imports() -> None:
    """A torch module's star import binds its __all__ (torch's does not bind ``cuda``: the
    submodule is not in it); another package's star binds nothing porter can see."""
    module = cst.parse_module(STAR_SOURCE)
    index = TreeIndex(module)
    names = LazyQualifiedNames(index, lambda: MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider))
    found: dict[str, set[str]] = {}
    for node in index.preorder:
        parent = index.parents.get(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node or isinstance(parent, cst.Param):
            continue  # not references
        if isinstance(node, (cst.Name, cst.Attribute)):
            found.setdefault(module.code_for_node(node), set()).update(_imported(names[node]))
    assert found["GradScaler"] == {"torch.GradScaler"}
    assert found["is_available"] == {"torch.cuda.is_available"}
    assert found["amp.autocast"] == {"torch.cuda.amp.autocast"}
    assert found["cuda.is_available"] == set()
    assert found["float16"] == {"torch.float16"}
    assert found["autocast"] == found["synchronize"] == set()  # parameters shadow the star's names
    assert found["helper"] == found["DataParallel"] == set()
    assert not names.used_fallback


POSITION_SOURCES = [
    "import torch\r\nx = torch.zeros(1).cuda()\r\n\r\ndef f():\r\n    return x.cuda()\r\n",
    "# header comment\n\n\nimport torch\nif True:\n\tx = torch.ones(1).cuda()\n",
    "import torch\nx = 1\ry = torch.cuda.synchronize()\r\nz = '''a\nb\r\nc'''; w = torch.cuda\n",
    "import torch\nclass A:\n    def f(self):\n        return torch.cuda.is_available()\nx = A()",
    "\n\n",
    "class A:\n    # c\n\n    @\\\n    deco\n    # d\n    @other(\n  1)\n    def f(self): x = 1; y = 2\n\n    def g(self):\n        '''a\n b'''\n        return 3\n",
]


@pytest.mark.corpus  # a sweep over every fixture and sample: out of the fast loop, still in CI
def test_positions_match_position_provider() -> None:
    modules = [cst.parse_module(text) for text in POSITION_SOURCES] + [module for _, module in _modules()[::5]]
    for module in modules:
        index = TreeIndex(module)
        reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        # Lines by code generation, and read from CPython's tree of the same text (checked against the text).
        both = [StatementPositions(module, index.parents), StatementPositions(module, index.parents, module.code, ast.parse(module.code))]
        for node in index.preorder:
            start = reference[node].start
            for positions in both:
                assert positions(node) == (start.line, start.column), (module.code_for_node(node)[:40], type(node).__name__)


STAR_MODULES = ("torch", "torch.amp", "torch.backends.cuda", "torch.cuda", "torch.cuda.amp", "torch.distributed.fsdp",
                "torch.nn.parallel", "torch.optim", "torch.utils.data")
STAR_DOC = '''"""What ``from M import *`` binds, for the torch modules whose star import porter resolves.

A star import binds the names in the module's ``__all__`` (Python language reference, "The import
statement"). These are torch {version}'s ``__all__`` lists, read from the installed torch by
``tests/test_walk.py::test_star_exports_are_torchs_all`` (it fails when they drift, and rewrites
this file under ``PORTER_UPDATE_FIXTURES=1``). A table, not an import at run time: ``porter
migrate`` does not need torch (it is the ``check`` extra), importing it takes seconds, and the port
must not depend on the porting machine's torch. Modules without ``__all__`` (``torch.nn``,
``torch.distributed``) bind whatever public globals they hold at import time, and other packages'
star imports (``from utils import *``) bind what is not in view: names from those stay unresolved.
"""
'''


def _render_star_exports() -> str:
    import importlib
    import textwrap

    import torch

    lines = [STAR_DOC.format(version=torch.__version__.split("+")[0]), "from __future__ import annotations", "",
             "STAR_EXPORTS: dict[str, frozenset[str]] = {"]
    for name in STAR_MODULES:
        exported = " ".join(sorted(set(importlib.import_module(name).__all__)))
        lines += [f'    "{name}": frozenset(', "        ("]
        lines += [f'            "{chunk} "' for chunk in textwrap.wrap(exported, 96)]
        lines += ["        ).split()", "    ),"]
    return "\n".join([*lines, "}", ""])


def test_star_exports_are_torchs_all() -> None:
    pytest.importorskip("torch")
    path = ROOT / "porter" / "engine" / "fastcst" / "star_exports.py"
    expected = _render_star_exports()
    if os.environ.get("PORTER_UPDATE_FIXTURES") == "1":
        path.write_text(expected)
    assert path.read_text() == expected, "torch's __all__ changed: regenerate with PORTER_UPDATE_FIXTURES=1"


def test_walk_and_find_over_a_subtree_are_the_stack_walks() -> None:
    """A subtree's walk and find read a slice of the pre-order list; they must be the walk through
    children, node for node (every statement and expression of a few modules)."""
    for path, module in _parsed_first(15):
        index = TreeIndex(module)
        for node in index.preorder:
            if not isinstance(node, (cst.BaseStatement, cst.BaseExpression)):
                continue
            stack, expected = [node], []
            while stack:
                current = stack.pop()
                expected.append(current)
                stack.extend(reversed(list(current.children)))
            walked = list(index.walk(node))
            assert len(walked) == len(expected) and all(a is b for a, b in zip(walked, expected)), path
            found = index.find(node, cst.Name, cst.BaseCompoundStatement)
            assert found == [n for n in expected if isinstance(n, (cst.Name, cst.BaseCompoundStatement))], path
