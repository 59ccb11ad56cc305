"""The post-port verifier: porter reads its own output back and says what still cannot run on Neuron.

What it checks, on the tree of the file as written (the ported module, or the original when the
port changed nothing), in one pass over a ``TreeIndex`` of it (no second parse):

* ``cuda-only``: CUDA-only code reachable on Neuron whose statement carries no ``# porter: CODE``
  marker about it (a comment line above it, or a trailing comment, whose code is the finding's or
  covers it in ``MARKER_COVERS``: an NRN206 scaler note does not excuse a ``"cuda"`` beside it):
  ``torch.cuda.*`` (the availability queries
  ``is_available``/``is_initialized`` anywhere and ``device_count`` inside a test are harmless: they
  answer False/0), ``.cuda()`` calls, ``"cuda"``/``"cuda:N"``/``f"cuda:{i}"`` device values,
  ``"nccl"`` values, CUDA/NCCL environment variable names (``rules/_tables/cuda_only.py:
  CUDA_ENV``), ``DataParallel``, the CUDA-only libraries and calls of ``rules/_tables/cuda_only.py``
  (imports; the uses of a package imported whole, ``import apex`` then ``apex.amp.x``, when that
  import is not marked; kernel decorators; ``cpp_extension.load``, ``_scaled_mm``,
  ``kernels.get_kernel``, SDPA backend selection), ``nvidia-smi`` run from Python, and tests on
  ``torch.version.cuda``. Not inside a CUDA backend of a device abstraction
  (``rules/_lib/backends.py``: ``class CUDAAccelerator(Accelerator)``, or a ``cuda.py`` holding
  one): the port keeps it whole on purpose and says so with its NRN115 marker, so its CUDA is
  kept, not left over (a use there of a CUDA-only import counts as marked).
* ``neuron-api``: a ``torch.accelerator`` memory call (it asserts on Neuron: the Neuron allocator
  is not torch's ``DeviceAllocator``, neuron-facts §0.1) without an NRN104 marker, and
  every ``torch.neuron.<name>`` is in the signature table
  (``rules/_tables/neuron_api.py``) and every call binds to its parameters: no extra positional
  argument, no unknown keyword, no parameter given twice, every required one given (calls with
  ``*args``/``**kwargs`` are checked only for what they show).
* ``cpu-fallback`` (a call): an unguarded ``torch.neuron.X`` where ``torch.cuda.X`` does nothing
  on a CPU-only machine (``empty_cache``, the memory counters, the seeds):
  the original ran there, the port raises ``AttributeError`` without torch-neuronx. Guarded means
  under a test that holds on Neuron and not on a CPU-only run (``torch.accelerator.is_available()``,
  a ``"neuron"`` device test, ``device != "cpu"``, ``hasattr(torch, "neuron")``) or in a ``try`` that catches ``AttributeError`` or broader.
* ``cpu-fallback`` (the file): the original tested CUDA availability to choose a device (an ``if``/ternary on
  ``torch.cuda.is_available()``/``device_count()`` that places something, or a statement that keeps
  the answer, ``use_cuda = torch.cuda.is_available()``) and the output tests no availability at
  all (``torch.accelerator.is_available``/``current_accelerator``, ``torch.neuron.is_available``/
  ``device_count``, or the CUDA test kept).

How reachability is decided (what a test holds on Neuron): a test is evaluated to True, False or
unknown on a Trainium host. False: ``torch.cuda.is_available()``, ``torch.cuda.is_initialized()``,
``torch.backends.cudnn.is_available()``, ``torch.cuda.device_count()`` (truthy, ``> 0``, ``>= 1``,
``> 1``, ``!= 0``), ``torch.version.cuda`` (truthy, ``is not None``), ``x.is_cuda``, ``x ==
"cuda"``/``"cuda" in x``/``x.startswith("cuda")`` with a CUDA device literal, ``x in ("cuda",
...)`` with CUDA literals only. True: ``torch.neuron.is_available()``/``device_count()``,
``torch.accelerator.is_available()``, ``hasattr(torch, "neuron")``, ``hasattr(torch,
"accelerator")`` (every torch since 2.6), ``x == "neuron"``/
``x.type == "neuron"`` (the port's own tests). ``not``, ``and``, ``or``, ``==/!= 0``, ``is None`` and
``!=`` combine them; a name or attribute every assignment in the file gives one known value
(``use_cuda = not args.no_cuda and torch.cuda.is_available()``) holds it. Anything else is unknown.
A test of torch's version against a release older than TorchNeuron's first (2.10:
``version.parse(torch.__version__) < version.parse("2.4")`` is False, ``.release >= (2, 3)`` True)
is decided. A library the requirements port removes (apex, flash-attn, xformers ...:
``_ABSENT_ON_NEURON``) is not installed on Trainium: in a ``try`` that imports it under ``except
ImportError``, the rest of the body and the ``else`` do not run, and a flag set there
(``APEX_INSTALLED = True``) holds what the handler sets (``= False``).
The body of an ``if``/``while``/ternary whose test is False is unreachable, and so is the
``else`` of a True test; unknown tests leave both reachable. A CUDA class named only in an
annotation (``-> GradScaler``) runs nothing; a string in a list that also names another
accelerator (``['cuda', 'cpu', 'xpu', 'npu']``) lists backends, it chooses no device. Code after an early exit, and
functions only called from unreachable code, are not followed.

Cost: the ported file's ``TreeIndex`` (derived from the original's: only the nodes the port rebuilt are
walked), one pass over it here, import-based qualified
names (``porter.engine.fastcst.names``) asked only for chains rooted at an imported name, and
positions only for findings. Measured (2 shared cores, 2026-12-01): 8-11% of the port's time on
the samples and on transformers' ``trainer.py``/``modeling_utils.py``; more where a name is both
imported and bound where the name index cannot follow the scope (a ``global``, a walrus, a
comprehension: libcst's scope analysis is then run on the output too). A finding inside a class
or function costs the positions of its innermost class or def body statement only.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, QualifiedName, QualifiedNameProvider, QualifiedNameSource

from porter.engine.fastcst.names import LazyQualifiedNames
from porter.engine.fastcst.positions import StatementPositions
from porter.engine.fastcst.walk import TreeIndex
from porter.engine.markers import MARKER_CODE as _MARKER_CODE  # the syntax, also read without libcst
from porter.engine.markers import marker_comments
from porter.engine.results import Finding, FindingKind
from porter.rules._lib.backends import NO_SCOPES, backend_scopes
from porter.rules._lib.device import cuda_string
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._tables import cuda_only
from porter.rules._tables.cuda import ACCELERATOR_OWN_MEMORY, ACCELERATOR_OWN_MEMORY_MARKED
from porter.rules._tables.neuron_api import REQUIRED, TABLE, Entry

Names = Mapping[cst.CSTNode, set[QualifiedName]]
Position = Callable[[cst.CSTNode], tuple[int, int]]

MARKER = "# porter:"
# What a review marker excuses: besides findings of its own code, the verifier's finding codes
# (NRN101 a "cuda" device value, NRN102 .cuda(), NRN103 torch.cuda.*, NRN109 DataParallel,
# NRN114/NRN303 a CUDA/NCCL environment name, NRN301 "nccl", NRN901-912 CUDA-only libraries and
# calls) that the marked code keeps on purpose. Any other CUDA value on the statement is still
# found: an NRN206 note on a kept scaler says nothing of a "cuda" device beside it.
MARKER_COVERS: dict[str, frozenset[str]] = {
    # torch.cuda API with no Neuron form (or arguments torch.neuron rejects), left for a human
    "NRN104": frozenset({"NRN103"}),
    # a legacy typed-tensor class (torch.cuda.FloatTensor) kept where no factory call replaces it
    "NRN107": frozenset({"NRN103"}),
    # torch.cuda.OutOfMemoryError kept in the handler beside Neuron's allocation failure
    "NRN108": frozenset({"NRN103"}),
    # DataParallel left for DDP: its device_ids=range(torch.cuda.device_count()) go with it
    "NRN109": frozenset({"NRN103"}),
    # a profiler's activities=["cpu", "cuda"]: the "cuda" there is an activity, not a device value
    "NRN111": frozenset({"NRN101"}),
    # the environment rule's two codes name the same kind of value (a CUDA/NCCL setting)
    "NRN114": frozenset({"NRN303"}),
    "NRN303": frozenset({"NRN114"}),
    # a CUDA backend of a device abstraction kept whole: all of its CUDA is kept on purpose
    "NRN115": frozenset({"NRN101", "NRN102", "NRN103", "NRN109", "NRN114", "NRN301", "NRN303"}),
    # autocast whose arguments could not be ported: the CUDA device type or torch.cuda.amp form kept
    "NRN202": frozenset({"NRN101", "NRN103"}),
    # a GradScaler kept or left for a human (mmengine's per-device `scaler_type = GradScaler`): the
    # torch.cuda.amp class it names goes with it; a "cuda" device value beside it does not (W13)
    "NRN206": frozenset({"NRN103"}),
    # a DeepSpeed call left to port to FSDP2/DDP: its dist_backend="nccl" goes with it
    "NRN304": frozenset({"NRN301"}),
    # a CUDA-only optimizer (apex FusedAdam, bitsandbytes 8-bit) kept or changed for review
    "NRN511": frozenset({"NRN901", "NRN905", "NRN908"}),
    "NRN512": frozenset({"NRN901", "NRN905", "NRN908"}),
    # from_pretrained's bitsandbytes loading (BitsAndBytesConfig) left for review
    "NRN813": frozenset({"NRN905"}),
}
_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
_IMPORTS = (cst.Import, cst.ImportFrom)
_STRINGS = (cst.SimpleString, cst.FormattedString)
_ELEMENTS = (cst.Element, cst.Tuple, cst.List, cst.Set)
# The walk's type tests (libcst's node classes have no subclasses: identity is isinstance).
_CHECKED = frozenset({cst.Attribute, cst.Name, cst.Call, cst.SimpleString, cst.FormattedString, cst.Import, cst.ImportFrom})
_BRANCHES = frozenset({cst.If, cst.While, cst.IfExp})
_TESTS = frozenset({cst.Comparison, cst.BooleanOperation, cst.Assert})

# Tests that are False on a Trainium host, and True there.
_FALSE_QUERIES = frozenset({
    "torch.cuda.is_available", "torch.cuda.is_initialized", "torch.backends.cudnn.is_available",
    "torch.cuda.device_count",
})
_TRUE_QUERIES = frozenset({
    "torch.neuron.is_available", "torch.neuron.device_count", "torch.accelerator.is_available",
    "torch.accelerator.device_count",
})
# torch.cuda names that are harmless on Neuron: anywhere / only inside a test.
_HARMLESS = frozenset({"torch.cuda.is_available", "torch.cuda.is_initialized"})
_HARMLESS_IN_TESTS = frozenset({"torch.cuda.device_count", "torch.cuda", "torch.cuda.is_bf16_supported"})
_AVAILABILITY = frozenset({
    "torch.cuda.is_available", "torch.cuda.device_count", "torch.accelerator.is_available",
    "torch.accelerator.current_accelerator", "torch.accelerator.device_count", "torch.neuron.is_available",
    "torch.neuron.device_count",
})
_CUDA_AVAILABILITY = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})
_ACCELERATOR_QUERIES = frozenset({
    "torch.accelerator.is_available", "torch.accelerator.current_accelerator", "torch.accelerator.device_count",
    "torch.neuron.is_available", "torch.neuron.device_count",
})
# torch.cuda calls that do nothing (or answer 0 / False) on a machine without CUDA: code that made
# them unguarded ran on the CPU, and the same call on torch.neuron there is an AttributeError.
_CPU_SAFE_ON_CUDA = frozenset({
    "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_stats", "manual_seed", "manual_seed_all", "seed", "seed_all", "is_initialized",
})
# torch.accelerator's memory calls: they go through torch's DeviceAllocator and assert on Neuron.
_ACCELERATOR_MEMORY = ACCELERATOR_OWN_MEMORY | frozenset(ACCELERATOR_OWN_MEMORY_MARKED)
_DATA_PARALLEL = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel",
    "torch.nn.parallel.data_parallel.DataParallel",
})
# CUDA-only libraries the requirements port comments out (NRN994: porter/filetypes/_pins.py, remove=True):
# not installed on Trainium, so the code after their guarded import in a ``try`` (and its
# ``else``) does not run there. bitsandbytes, triton, pynvml ... have CPU builds: not counted.
_ABSENT_ON_NEURON = frozenset({
    "apex", "flash_attn", "xformers", "mamba_ssm", "causal_conv1d", "flashinfer", "transformer_engine",
    "pycuda", "torch_tensorrt", "tensorrt",
})
# TorchNeuron is torch 2.10 and later (2.9 was the last XLA-based torch-neuronx; the released
# wheels are 2.13/2.14: AWS Neuron docs, release notes and the PyTorch/XLA transition
# announcement): a test of torch's version against an older release is decided on Neuron.
_NEURON_TORCH_FLOOR = (2, 10)
_VERSION = re.compile(r"^\s*(\d+)\.(\d+)")
# Names of accelerators other than CUDA/Neuron/CPU: a list holding one names backends (a registry's
# supported list), it does not choose a device.
_OTHER_BACKENDS = frozenset({"xpu", "npu", "mps", "hpu", "mlu", "musa", "xla", "tpu", "ipu", "dipu", "sdaa", "supa", "klxpu", "rocm", "hip"})
_PLACES = re.compile(r"""["'](cuda|cpu|neuron)\b|\.cuda\(|\.to\(|device""")
_GUARDS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
_KEY_METHODS = frozenset({"get", "pop", "setdefault"})  # their first argument is a key
_COMPARE_METHODS = frozenset({"startswith", "endswith", "find", "index", "count", "__contains__"})


@dataclass
class _Binding:
    """An import of a CUDA-only library: the local name it binds and whether it is marked."""

    statement: cst.BaseStatement
    entry: cuda_only.Entry
    marked: bool
    whole: bool  # ``import apex`` / ``import bitsandbytes as bnb``: the uses say what is used
    guarded: bool  # inside ``try:`` with an ``except ImportError`` (or broader) handler
    uses: list[tuple[cst.BaseStatement, bool]] = field(default_factory=list)  # (statement, marked)


def verify_port(
    module: cst.Module,
    path: str,
    had_fallback: bool,
    text: str | None = None,
    python_tree: ast.Module | None = None,
    *,
    original: TreeIndex | None = None,
) -> tuple[Finding, ...]:
    """Verify a ported module (a tree not indexed yet): index it, resolve names lazily. ``text``
    and ``python_tree``: its code and CPython's tree of it, when known (cheaper positions).
    ``original``: the index of the tree it was ported from (the subtrees the port kept are not
    walked again)."""
    tree = TreeIndex(module) if original is None else TreeIndex.derived(module, original)
    names = LazyQualifiedNames(tree, lambda: MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider))  # type: ignore[arg-type]
    positions = StatementPositions(module, tree.parents, text, python_tree)
    return Verifier(tree, names, positions, path).run(expect_fallback=had_fallback)


def verify_tree(tree: TreeIndex, names: Names, position: Position, path: str) -> tuple[Finding, ...]:
    """Verify a file the port left as it was, on the index and names the port already built."""
    return Verifier(tree, names, position, path).run(expect_fallback=False)


def _ancestors(tree: TreeIndex, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    current = tree.parents.get(node)
    while current is not None:
        yield current
        current = tree.parents.get(current)


def _code(tree: TreeIndex, node: cst.CSTNode) -> str:
    return tree.root.code_for_node(node) if isinstance(tree.root, cst.Module) else ""


def had_fallback(tree: TreeIndex, names: Names) -> bool:
    """Whether the original chooses the CPU when CUDA is absent (see the module doc)."""
    verifier = Verifier(tree, names, lambda node: (0, 0), "")
    for call in tree.find(tree.root, cst.Call):
        assert isinstance(call, cst.Call)
        if verifier.qualified(call.func) & _CUDA_AVAILABILITY:
            statement = verifier.statement_of(call)
            choice = next((n for n in _ancestors(tree, call) if isinstance(n, cst.IfExp)), None)
            if choice is not None:
                # A ternary is a fallback when it picks a device (``"cuda" if ... else "cpu"``), not
                # when it picks something else (nanoGPT's bf16-or-fp16 dtype probe).
                if _PLACES.search(_code(tree, choice.body) + _code(tree, choice.orelse)):
                    return True
                continue
            if not isinstance(statement, (cst.If, cst.While)):
                return True  # the answer kept in a name
            if _PLACES.search(tree.root.code_for_node(statement) if isinstance(tree.root, cst.Module) else ""):
                return True
    return False


class Verifier:
    def __init__(self, tree: TreeIndex, names: Names, position: Position, path: str) -> None:
        self.tree = tree
        self.names = names
        self.position = position
        self.path = path
        self.findings: dict[tuple[int, str | None, FindingKind], Finding] = {}
        self.bindings: dict[str, list[_Binding]] = {}
        self.flags: dict[str, bool | None] = {}
        self.fallback = False
        self._assignments: dict[str, list[cst.BaseExpression]] | None = None
        self._imported: set[str] = set()
        self._marked_blocks: set[tuple[int, str]] = set()  # (block, library) with a marked import
        # CUDA backends of a device abstraction, kept whole by the port on purpose (rules/_lib/backends.py).
        root = tree.root
        self.kept = backend_scopes(root, names, path) if isinstance(root, cst.Module) else NO_SCOPES
        self._absent: dict[int, cst.BaseStatement] | None = None  # see _absent_library_trys
        self._cuda_imports: dict[str, list[cst.ImportFrom]] | None = None  # see _cuda_bound_reachably
        for node in tree.find(tree.root, *_IMPORTS):
            assert isinstance(node, (cst.Import, cst.ImportFrom))
            self._imported |= _bound_heads(node)

    # ----------------------------------------------------------------- entry point
    def run(self, expect_fallback: bool) -> tuple[Finding, ...]:
        root = self.tree.root
        self._learn_flags()
        if len(self.tree.order) == len(self.tree.preorder):
            self._walk()
        else:  # a node twice in the tree (an edit reused one): positions do not name it
            self._walk_stack()
        self._finish_bindings()
        if expect_fallback and not self.fallback and not self._tests_availability_anywhere():
            self._add(
                root,
                FindingKind.CPU_FALLBACK,
                "the original falls back to the CPU when no GPU is present; the port tests no accelerator "
                "(use torch.accelerator.is_available() / current_accelerator() to keep the fallback)",
                "NRN101",
                line=1,
            )
        return tuple(sorted(self.findings.values(), key=lambda f: (f.line, f.kind.value, f.code or "", f.message)))

    def _walk(self) -> None:
        """Every reachable node in pre-order, each checked with whether it is inside a test
        expression (unreachable code on Neuron is not entered): over the index's pre-order list,
        a subtree skipped by jumping past it, a test expression's subtree marked by the position
        past it. Types are tested by identity: this loop sees every node of the file."""
        index = self.tree
        preorder, order, end = index.preorder, index.order, index.end
        check = self._check
        jumps: dict[int, int] = {}  # first position of an unreachable subtree -> the position past it
        test_starts: dict[int, int] = {}  # first position of a branch's test -> the position past it
        tests: list[int] = []  # positions past the test expressions being walked (innermost last)
        position, count = 0, len(preorder)
        while position < count:
            if jumps:
                past = jumps.pop(position, None)
                if past is not None:
                    position = past
                    continue
            while tests and tests[-1] <= position:
                tests.pop()
            if test_starts:
                past = test_starts.pop(position, None)
                if past is not None:
                    tests.append(past)
            node = preorder[position]
            kind = type(node)
            if kind in _CHECKED:
                check(node, bool(tests))
            if kind is cst.Try and id(node) in self._absent_library_trys():
                # After the import of a library Trainium does not have: only the part before it runs.
                at = position + 1
                for part in self._reachable_try_parts(node):  # type: ignore[arg-type]
                    if order[part] > at:
                        jumps[at] = order[part]
                    at = end(part)
                if end(node) > at:
                    jumps[at] = end(node)
            elif kind in _BRANCHES:
                value = self.value(node.test)  # type: ignore[attr-defined]
                test_starts[order[node.test]] = end(node.test)  # type: ignore[attr-defined]
                if value is False:
                    jumps[order[node.body]] = end(node.body)  # type: ignore[attr-defined]
                orelse = node.orelse  # type: ignore[attr-defined]
                if value is True and kind is not cst.While and orelse is not None:
                    jumps[order[orelse]] = end(orelse)
            elif kind in _TESTS or (kind is cst.UnaryOperation and type(node.operator) is cst.Not):  # type: ignore[attr-defined]
                tests.append(end(node))
            position += 1

    def _walk_stack(self) -> None:
        """``_walk`` with a stack of (node, inside a test) entries: for a tree holding a node twice."""
        children = self.tree.children
        of = self.tree.of
        check = self._check
        stack: list[tuple[cst.CSTNode, bool]] = [(self.tree.root, False)]
        pop, push, extend = stack.pop, stack.append, stack.extend
        while stack:
            node, in_test = pop()
            kind = type(node)
            if kind in _CHECKED:
                check(node, in_test)
            kids: Sequence[cst.CSTNode] | None = children.get(node)
            if kids is None:
                kids = of(node)
                if not kids:
                    continue
            if kind is cst.Try and id(node) in self._absent_library_trys():
                extend([(kid, in_test) for kid in reversed(self._reachable_try_parts(node))])  # type: ignore[arg-type]
                continue
            if kind in _BRANCHES:
                value = self.value(node.test)  # type: ignore[attr-defined]
                body = value is not False
                orelse = value is not True or kind is cst.While
                for kid in reversed(kids):
                    if kid is node.test:  # type: ignore[attr-defined]
                        push((kid, True))
                    elif kid is node.body:  # type: ignore[attr-defined]
                        if body:
                            push((kid, in_test))
                    elif kid is node.orelse:  # type: ignore[attr-defined]
                        if orelse:
                            push((kid, in_test))
                    else:
                        push((kid, in_test))
                continue
            test = in_test or kind in _TESTS or (kind is cst.UnaryOperation and type(node.operator) is cst.Not)  # type: ignore[attr-defined]
            extend([(kid, test) for kid in reversed(kids)])

    def _tests_availability_anywhere(self) -> bool:
        """An availability query in code the walk skipped as off on Neuron (``if device.type !=
        "neuron": ... torch.accelerator.is_available()``): it is the CPU fallback there all the same."""
        return any(self.qualified(node.func) & _AVAILABILITY for node in self.tree.find(self.tree.root, cst.Call))  # type: ignore[attr-defined]

    # ----------------------------------------------------------------- names and statements
    def qualified(self, node: cst.CSTNode) -> set[str]:
        """Imported qualified names of a dotted chain rooted at a name (never through a call)."""
        current = node
        while type(current) is cst.Attribute:
            current = current.value  # type: ignore[attr-defined]
        if type(current) is not cst.Name:
            return set()
        if current.value not in self._imported:  # type: ignore[attr-defined]
            return set()
        found = self.names.get(node, set()) or set()
        return {q.name for q in found if q.source is QualifiedNameSource.IMPORT}

    def statement_of(self, node: cst.CSTNode) -> cst.BaseStatement:
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(current, _STATEMENTS):
            current = self.tree.parents.get(current)
        return current if current is not None else node  # type: ignore[return-value]

    # ----------------------------------------------------------------- what a test holds on Neuron
    def value(self, test: cst.BaseExpression) -> bool | None:
        """True / False on a Trainium host, None when unknown (the module doc lists the cases)."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.value(test.expression)
            return None if inner is None else not inner
        if isinstance(test, cst.BooleanOperation):
            left, right = self.value(test.left), self.value(test.right)
            if isinstance(test.operator, cst.And):
                return False if False in (left, right) else True if left is right is True else None
            return True if True in (left, right) else False if left is right is False else None
        if isinstance(test, cst.Call):
            names = self.qualified(test.func)
            if names & _FALSE_QUERIES:
                return False
            if names & _TRUE_QUERIES:
                return True
            # torch.neuron with torch-neuronx; torch.accelerator in every torch since 2.6 (TorchNeuron: 2.13+)
            if dotted(test.func) == "hasattr" and len(test.args) == 2 and string_value(test.args[1].value) in ("neuron", "accelerator"):
                return True if self.qualified(test.args[0].value) & {"torch"} else None
            if isinstance(test.func, cst.Attribute) and test.func.attr.value == "startswith" and test.args:
                prefix = string_value(test.args[0].value)
                if prefix is not None and prefix.startswith("cuda"):
                    return False
            return None
        if isinstance(test, (cst.Attribute, cst.Name)):
            if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
                return False
            if "torch.version.cuda" in self.qualified(test):
                return False
            text = dotted(test)
            return self.flags.get(text) if text else None
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            return self._compare(test.left, test.comparisons[0])
        return None

    def _compare(self, left: cst.BaseExpression, comparison: cst.ComparisonTarget) -> bool | None:
        op, right = comparison.operator, comparison.comparator
        decided = self._torch_version_test(left, op, right)
        if decided is not None:
            return decided
        negated = isinstance(op, (cst.NotEqual, cst.IsNot, cst.NotIn))
        if isinstance(op, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)):
            for one, other in ((left, right), (right, left)):
                literal = string_value(one)
                if literal is not None and string_value(other) is None:
                    kind = literal.split(":")[0]
                    if kind in ("cuda", "neuron"):
                        held = kind == "neuron"
                        return held != negated
                if isinstance(one, cst.Name) and one.value == "None" or isinstance(one, cst.Integer) and one.value == "0":
                    inner = self.value(other)
                    if inner is not None:  # a False query is None / 0 on Neuron
                        return (not inner) != negated
            return None
        if isinstance(op, (cst.In, cst.NotIn)):
            literal = string_value(left)
            if literal is not None and cuda_string(left):
                return negated  # "cuda" in device: False
            if isinstance(right, (cst.Tuple, cst.List, cst.Set)) and right.elements:
                if all(cuda_string(e.value) for e in right.elements):
                    return negated
            return None
        inner = self.value(left)
        number = right.value if isinstance(right, cst.Integer) else None
        if inner is False and number is not None:  # device_count() > 0 on Neuron is 0 > 0
            if isinstance(op, cst.GreaterThan) or isinstance(op, cst.GreaterThanEqual) and number != "0":
                return False
        return None

    def _torch_version_test(self, left: cst.BaseExpression, op: cst.BaseCompOp, right: cst.BaseExpression) -> bool | None:
        """``version.parse(torch.__version__) < version.parse("2.4")``, ``digit_version(
        torch.__version__) >= digit_version("2.0.0")``, ``version.parse(torch.__version__).release
        >= (2, 3)``: decided on Neuron when the release compared with is older than TorchNeuron's
        first (``_NEURON_TORCH_FLOOR``); else unknown."""
        flipped: dict[type, type] = {cst.LessThan: cst.GreaterThan, cst.LessThanEqual: cst.GreaterThanEqual,
                   cst.GreaterThan: cst.LessThan, cst.GreaterThanEqual: cst.LessThanEqual}
        kind: type = type(op)
        if self._is_torch_version(right) and not self._is_torch_version(left):
            left, right = right, left
            kind = flipped.get(kind, kind)
        if not self._is_torch_version(left):
            return None
        release = _release(right)
        if release is None or release >= _NEURON_TORCH_FLOOR:
            return None
        if kind in (cst.GreaterThan, cst.GreaterThanEqual, cst.NotEqual):
            return True
        if kind in (cst.LessThan, cst.LessThanEqual, cst.Equal):
            return False
        return None

    def _is_torch_version(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Attribute) and node.attr.value in ("release", "base_version"):
            node = node.value
        if isinstance(node, cst.Call) and len(node.args) == 1:
            node = node.args[0].value
        return "torch.__version__" in self.qualified(node)

    def _absent_library_trys(self) -> dict[int, cst.BaseStatement]:
        """The ``try`` statements whose body imports a library Trainium does not have
        (``_ABSENT_ON_NEURON``) under an ``except ImportError`` (or broader), each with the
        statement of its body holding that import."""
        if self._absent is None:
            self._absent = {}
            for node in self.tree.find(self.tree.root, *_IMPORTS):
                assert isinstance(node, (cst.Import, cst.ImportFrom))
                if not _imports_absent(node):
                    continue
                statement = self.statement_of(node)
                child: cst.CSTNode = statement
                current = self.tree.parents.get(statement)
                while current is not None and not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Module)):
                    if isinstance(current, cst.Try) and child is current.body:
                        if _catches_import_errors(current) and isinstance(current.body, cst.IndentedBlock):
                            top = next(s for s in current.body.body if s is statement or _within(self.tree, statement, s))
                            self._absent.setdefault(id(current), top)
                        break
                    child, current = current, self.tree.parents.get(current)
        return self._absent

    def _reachable_try_parts(self, node: cst.Try) -> list[cst.CSTNode]:
        """The children of a ``try`` that run when its absent library's import fails: the body up
        to and with the import, the handlers and ``finally`` (not the ``else``)."""
        stop = self._absent_library_trys()[id(node)]
        kept: list[cst.CSTNode] = []
        assert isinstance(node.body, cst.IndentedBlock)
        for statement in node.body.body:
            kept.append(statement)
            if statement is stop:
                break
        kept.extend(node.handlers)
        if node.finalbody is not None:
            kept.append(node.finalbody)
        return kept

    def _after_absent_import(self, node: cst.CSTNode) -> bool:
        """Inside a ``try`` body after its absent library's import, or in that ``try``'s ``else``."""
        child, current = node, self.tree.parents.get(node)
        absent = self._absent_library_trys()
        while current is not None:
            if isinstance(current, cst.Try) and id(current) in absent:
                if child is current.orelse:
                    return True
                if child is current.body and isinstance(current.body, cst.IndentedBlock):
                    statements = list(current.body.body)
                    stop = statements.index(absent[id(current)])
                    mine = next((i for i, s in enumerate(statements) if s is node or _within(self.tree, node, s)), -1)
                    return mine > stop
            child, current = current, self.tree.parents.get(current)
        return False

    def _absent_fallback(self, node: cst.Assign) -> bool:
        """``X = False`` / ``X = None`` in a handler of a ``try`` importing an absent library."""
        if not (isinstance(node.value, cst.Name) and node.value.value in ("False", "None")):
            return False
        absent = self._absent_library_trys()
        for current in _ancestors(self.tree, node):
            if isinstance(current, cst.ExceptHandler):
                owner = self.tree.parents.get(current)
                return isinstance(owner, cst.Try) and id(owner) in absent
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                return False
        return False

    def _learn_flags(self) -> None:
        """Names every assignment in the file gives one known value (``use_cuda = ...``)."""
        for node in self.tree.find(self.tree.root, cst.Assign):
            assert isinstance(node, cst.Assign)
            if self._absent_library_trys() and self._after_absent_import(node):
                continue  # APEX_INSTALLED = True after `import apex`: never runs on Neuron
            value = self.value(node.value) if _mentions_query(node.value) else None
            if value is None and self._absent_library_trys() and self._absent_fallback(node):
                value = False  # except ImportError: APEX_INSTALLED = False — what Neuron runs
            for target in node.targets:
                text = dotted(target.target)
                if text is None:
                    continue
                if text in self.flags and self.flags[text] != value:
                    self.flags[text] = None
                else:
                    self.flags.setdefault(text, value)
        for node in self.tree.find(self.tree.root, cst.AugAssign, cst.AnnAssign):
            text = dotted(node.target)  # type: ignore[attr-defined]
            if text is not None:
                self.flags[text] = None

    # ----------------------------------------------------------------- the checks
    def _check(self, node: cst.CSTNode, in_test: bool) -> None:
        kind = type(node)
        if kind is cst.Attribute or kind is cst.Name:
            parent = self.tree.parents.get(node)
            if type(parent) is cst.Attribute and (parent.value is node or parent.attr is node):  # type: ignore[union-attr]
                return  # only the whole chain is a reference
            self._reference(node, parent, in_test)  # type: ignore[arg-type]
        elif kind is cst.Call:
            self._call(node)  # type: ignore[arg-type]
        elif kind in _STRINGS:
            self._string(node)  # type: ignore[arg-type]
        elif kind is cst.Import or kind is cst.ImportFrom:
            self._import(node)  # type: ignore[arg-type]

    def _reference(self, node: cst.Attribute | cst.Name, parent: cst.CSTNode | None, in_test: bool) -> None:
        names = self.qualified(node)
        if not names:
            return
        called = isinstance(parent, cst.Call) and parent.func is node
        if names & _AVAILABILITY:
            self.fallback = True
        cuda = {name for name in names if name == "torch.cuda" or name.startswith("torch.cuda.")}
        if cuda and cuda != names and not self._cuda_bound_reachably((dotted(node) or "").split(".")[0]):
            names = names - cuda  # `else: from torch.cuda.amp import GradScaler` under a test true on Neuron
        for name in sorted(names):
            if name == "torch.cuda" or name.startswith("torch.cuda."):
                if name in _HARMLESS or in_test and name in _HARMLESS_IN_TESTS:
                    return
                if _in_annotation(self.tree, node):
                    return  # `-> GradScaler`: naming a class in a hint runs nothing on a device
                self._cuda_only(node, f"{name} left in the port: it needs a CUDA device", "NRN103")
                return
            if name == cuda_only.VERSION_CUDA:
                if in_test:
                    self._cuda_only(node, cuda_only.VERSION_CUDA_MESSAGE, "NRN912")
                return
            if name in _DATA_PARALLEL:
                if not called:
                    return  # isinstance(model, DataParallel) unwraps; only building one is CUDA-only
                self._cuda_only(node, "DataParallel left in the port: port to DDP with backend \"neuron\" under torchrun", "NRN109")
                return
            if called and name.startswith("torch.accelerator.") and name.rsplit(".", 1)[-1] in _ACCELERATOR_MEMORY:
                tail = name.rsplit(".", 1)[-1]
                if not _marked(self.statement_of(node), "NRN104") and not self._kept(node):
                    message = ACCELERATOR_OWN_MEMORY_MARKED.get(tail) or (
                        f"{name} asserts on Neuron (its allocator is not torch's DeviceAllocator): use torch.get_device_module().{tail}"
                    )
                    self._add(node, FindingKind.NEURON_API, message, "NRN104")
                return
            if name == "torch.neuron" or name.startswith("torch.neuron."):
                self._neuron_api(node, name[len("torch.neuron."):], parent if called else None)
                return
            where = "call" if called else "decorator" if isinstance(parent, cst.Decorator) else None
            if where is None and isinstance(parent, cst.Call) and isinstance(self.tree.parents.get(parent), cst.Decorator):
                where = "decorator"
            entry = cuda_only.entry_for(name, where) if where else None
            if entry is not None and entry.where != "import":
                if entry.prefix == "torch.nn.attention.sdpa_kernel" and isinstance(parent, cst.Call):
                    text = cst.Module([]).code_for_node(parent)
                    if not any(backend in text for backend in cuda_only.CUDA_SDPA_BACKENDS):
                        return
                self._cuda_only(node, entry.message, entry.code)
                return
            library = cuda_only.library_for(name)
            if library is not None:
                if not library.covers(name):  # a part another rule ports (apex/bnb optimizers)
                    library = cuda_only.Entry(library.code, library.prefix, f"{name} is CUDA-only and was not ported: replace it with the torch.optim / torch.nn equivalent")
                self._use(node, library)
                return

    def _cuda_bound_reachably(self, head: str) -> bool:
        """Whether an import that binds ``head`` to a ``torch.cuda`` name can run on Neuron: a name
        imported from torch.amp or from torch.cuda.amp by a version test is the first there."""
        if self._cuda_imports is None:
            self._cuda_imports = {}
            for node in self.tree.find(self.tree.root, cst.ImportFrom):
                assert isinstance(node, cst.ImportFrom)
                module = dotted(node.module) if node.module is not None and not node.relative else None
                if module is None or isinstance(node.names, cst.ImportStar) or not (module + ".").startswith("torch.cuda."):
                    continue
                for alias in node.names:
                    asname = alias.asname.name if alias.asname is not None else None
                    local = asname.value if isinstance(asname, cst.Name) else dotted(alias.name) or ""
                    self._cuda_imports.setdefault(local, []).append(node)
        return any(self._reachable(node) for node in self._cuda_imports.get(head, ()))

    def _reachable(self, node: cst.CSTNode) -> bool:
        """Not in a branch a test decided on Neuron keeps off, nor after an absent library's import."""
        child, current = node, self.tree.parents.get(node)
        while current is not None:
            if type(current) in _BRANCHES:
                value = self.value(current.test)  # type: ignore[attr-defined]
                if child is current.body and value is False:  # type: ignore[attr-defined]
                    return False
                if child is current.orelse and value is True and type(current) is not cst.While:  # type: ignore[attr-defined]
                    return False
            child, current = current, self.tree.parents.get(current)
        return not (self._absent_library_trys() and self._after_absent_import(node))

    def _use(self, node: cst.CSTNode, library: cuda_only.Entry) -> None:
        head = (dotted(node) or "").split(".")[0]
        statement = self.statement_of(node)
        for binding in self.bindings.get(head, ()):
            binding.uses.append((statement, _marked(statement, library.code) or self._kept(statement)))
            return
        # bound by an import in a branch not reachable here, or after: judge the use alone
        self._cuda_only(node, library.message, library.code)

    def _call(self, call: cst.Call) -> None:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and not self.qualified(func):
            self._cuda_only(call, ".cuda() left in the port: use .to(device)", "NRN102")
            return
        if self.qualified(func) & cuda_only.SHELL_CALLS and _names_nvidia_smi(self.tree, call):
            self._cuda_only(call, cuda_only.NVIDIA_SMI_MESSAGE, "NRN911")

    def _string(self, node: cst.SimpleString | cst.FormattedString) -> None:
        value = string_value(node)
        if value is not None and cuda_only.CUDA_ENV.match(value):  # an environment key: set or read
            if not isinstance(self.tree.parents.get(node), (cst.Comparison, cst.ComparisonTarget)):
                code = "NRN114" if "NCCL" in value else "NRN303"
                self._cuda_only(node, f"{value} left in the port: a CUDA/NCCL setting that Neuron does not read", code)
            return
        if _is_compared(self.tree, node) or not _is_setting(self.tree, node) or _names_backends(self.tree, node):
            return
        if _accelerator_default(self.tree, node):
            return
        if cuda_string(node):
            self._cuda_only(node, f"device value {_short(node)} left in the port: \"neuron\" (or torch.accelerator) on Neuron", "NRN101")
        elif value == "nccl":
            self._cuda_only(node, "backend \"nccl\" left in the port: the process-group backend on Neuron is \"neuron\"", "NRN301")

    def _import(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.ImportFrom) and (node.relative or node.module is None):
            return
        statement = self.statement_of(node)
        guarded = _guarded(self.tree, statement)
        module = dotted(node.module) if isinstance(node, cst.ImportFrom) and node.module is not None else None
        if isinstance(node.names, cst.ImportStar):
            entry = cuda_only.library_for(module or "")
            if entry is not None:
                self._cuda_only(node, entry.message, entry.code)
            return
        for alias in node.names:
            name = dotted(alias.name) or ""
            full = f"{module}.{name}" if module else name
            entry = cuda_only.library_for(full)
            if entry is None:
                continue
            asname = alias.asname.name if alias.asname is not None else None
            local = asname.value if isinstance(asname, cst.Name) else name.split(".")[0] if module is None else name
            whole = module is None and "." not in name
            marked = _marked(statement, entry.code)
            self.bindings.setdefault(local, []).append(_Binding(statement, entry, marked, whole, guarded))
            if marked:
                self._marked_blocks.add((id(self.tree.parents.get(statement)), entry.prefix))

    def _finish_bindings(self) -> None:
        """An unmarked import of a CUDA-only library (no marked import of it in the same block
        either): each unmarked use of what it binds is a finding, or the import itself when nothing
        uses it and it is not guarded (``try: import apex`` / ``except ImportError``)."""
        for bindings in self.bindings.values():
            for binding in bindings:
                if binding.marked or (id(self.tree.parents.get(binding.statement)), binding.entry.prefix) in self._marked_blocks:
                    continue  # marked, or another import of the library in its block is
                if not binding.uses and not binding.guarded:
                    self._cuda_only(binding.statement, binding.entry.message, binding.entry.code)
                for statement, marked in binding.uses:
                    if not marked:
                        self._cuda_only(statement, binding.entry.message, binding.entry.code)

    def _neuron_api(self, node: cst.CSTNode, rest: str, call: cst.CSTNode | None) -> None:
        parts = rest.split(".") if rest else []
        if not parts:
            return  # the module itself (passed around, hasattr)
        name = parts[1] if parts[0] == "memory" and len(parts) > 1 else parts[0]
        entry = TABLE.get(name)
        if entry is None:
            self._add(node, FindingKind.NEURON_API, f"torch.neuron.{rest} does not exist in torch-neuronx (rules/_tables/neuron_api.py)", "NRN103")
            return
        if isinstance(call, cst.Call) and len(parts) == 1 + (parts[0] == "memory"):
            problem = bind_problem(entry, call)
            if problem is not None:
                self._add(call, FindingKind.NEURON_API, f"torch.neuron.{rest}(...): {problem}", "NRN103")
        if name in _CPU_SAFE_ON_CUDA and not self._cpu_guarded(node):
            self._add(
                node,
                FindingKind.CPU_FALLBACK,
                f"torch.neuron.{rest} with no guard: torch.neuron exists only with torch-neuronx, and "
                f"torch.cuda.{rest} ran on a CPU-only machine; guard it (if torch.accelerator.is_available():)",
                "NRN103",
            )

    def _cpu_guarded(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` runs only where the port's own test says Neuron is there: in the body of
        an ``if``/``while``/ternary (or the right of an ``and``) whose test holds on Neuron, which
        every such test does by asking for the accelerator, or in a ``try`` that catches an
        ``AttributeError`` (or broader)."""
        child, current = node, self.tree.parents.get(node)
        while current is not None:
            if isinstance(current, (cst.If, cst.While, cst.IfExp)) and child is current.body:
                if self._false_on_cpu(current.test):
                    return True
            elif isinstance(current, cst.BooleanOperation) and isinstance(current.operator, cst.And):
                if child is current.right and self._false_on_cpu(current.left):
                    return True
            child, current = current, self.tree.parents.get(current)
        return _guarded(self.tree, node, _GUARDS | {"AttributeError"})

    def _false_on_cpu(self, test: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``test`` is false on a CPU-only machine because it asks for the accelerator: an
        accelerator/Neuron query, ``hasattr(torch, "neuron")``, a ``"neuron"`` device comparison, a
        ``device != "cpu"`` test (a CPU-only run chose the CPU), an ``and`` with one of those, or a name every assignment of which is one of those
        (``args.cuda = not args.no_cuda and torch.accelerator.is_available()``)."""
        if isinstance(test, cst.BooleanOperation):
            left, right = self._false_on_cpu(test.left, seen), self._false_on_cpu(test.right, seen)
            return left or right if isinstance(test.operator, cst.And) else left and right
        if isinstance(test, cst.Call):
            if self.qualified(test.func) & _ACCELERATOR_QUERIES:
                return True
            return dotted(test.func) == "hasattr" and len(test.args) == 2 and string_value(test.args[1].value) == "neuron"
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            comparison = test.comparisons[0]
            if isinstance(comparison.operator, (cst.Equal, cst.Is)):
                sides = (test.left, comparison.comparator)
                if any((string_value(side) or "").split(":")[0] == "neuron" for side in sides):
                    return True
            if isinstance(comparison.operator, cst.NotEqual) and string_value(comparison.comparator) == "cpu":
                return True  # device != "cpu": a CPU-only run chose the CPU
            if isinstance(comparison.operator, (cst.GreaterThan, cst.NotEqual)):
                return self._false_on_cpu(test.left, seen)  # device_count() > 0
            return False
        text = dotted(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
        if text is None or text in seen:
            return False
        values = self._assigned().get(text, [])
        return bool(values) and all(self._false_on_cpu(value, seen | {text}) for value in values)

    def _assigned(self) -> dict[str, list[cst.BaseExpression]]:
        if self._assignments is None:
            self._assignments = {}
            for node in self.tree.find(self.tree.root, cst.Assign, cst.AugAssign, cst.AnnAssign):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]  # type: ignore[attr-defined]
                value = node.value if not isinstance(node, cst.AugAssign) else None  # type: ignore[attr-defined]
                for target in targets:
                    text = dotted(target)
                    if text is not None:
                        # an augmented or bare annotated assignment: the value is not known
                        self._assignments.setdefault(text, []).append(value if value is not None else cst.Name("None"))
        return self._assignments

    # ----------------------------------------------------------------- recording
    def _cuda_only(self, node: cst.CSTNode, message: str, code: str | None) -> None:
        if _marked(self.statement_of(node), code) or self._kept(node):
            return
        self._add(node, FindingKind.CUDA_ONLY, message, code)

    def _kept(self, node: cst.CSTNode) -> bool:
        """Inside a CUDA backend the port kept whole: its CUDA is kept on purpose, not left over
        (the port's NRN115 marker on the backend says so)."""
        return bool(self.kept.scopes) and self.kept.holding(node, self.tree.parents) is not None

    def _add(self, node: cst.CSTNode, kind: FindingKind, message: str, code: str | None, line: int | None = None) -> None:
        where = line if line is not None else self.position(node)[0]
        key = (where, code, kind)
        if key not in self.findings:
            self.findings[key] = Finding(kind=kind, path=self.path, line=where, message=message, code=code)


def bind_problem(entry: Entry, call: cst.Call) -> str | None:
    """Why ``call`` does not bind to ``entry``'s parameters, or None when it does (as far as shown)."""
    params = entry.params
    starred = any(arg.star for arg in call.args)
    takes_kwargs = any(p.kind == "var_keyword" for p in params)
    positional_names = [p.name for p in params if p.kind == "positional_or_keyword"]
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if len(positional) > len(positional_names) and not any(arg.star == "*" for arg in call.args):
        return f"takes {len(positional_names)} positional argument(s), {len(positional)} given"
    bound = set(positional_names[: len(positional)])
    known = {p.name for p in params if p.kind != "var_keyword"}
    for arg in call.args:
        if arg.keyword is None:
            continue
        word = arg.keyword.value
        if word in bound:
            return f"{word}= given twice"
        if word not in known and not takes_kwargs:
            return f"unexpected keyword {word}= (parameters: {', '.join(p.name for p in params) or 'none'})"
        bound.add(word)
    missing = [p.name for p in params if p.default is REQUIRED and p.kind != "var_keyword" and p.name not in bound]
    if missing and not starred:
        return f"missing required argument {', '.join(missing)}"
    return None


# --------------------------------------------------------------------- helpers
def _marked(statement: cst.CSTNode, code: str | None) -> bool:
    """Whether a ``# porter: CODE`` marker right above the statement, or trailing it, is about a
    finding of ``code`` (``MARKER_COVERS``): a marker of another code excuses nothing else there."""
    codes = marker_codes(statement)
    if code is None:
        return bool(codes)
    return any(code == held or code in MARKER_COVERS.get(held, ()) for held in codes)


def marker_codes(statement: cst.CSTNode) -> set[str]:
    """The codes of the ``# porter: CODE ...`` markers above ``statement`` or trailing it
    (``# porter: ignore[...]`` is a suppression, which the engine applies by its own codes)."""
    comments = [line.comment for line in getattr(statement, "leading_lines", ())]
    comments.append(getattr(getattr(statement, "trailing_whitespace", None), "comment", None))
    codes = set()
    for comment in comments:
        match = _MARKER_CODE.match(comment.value) if comment is not None else None
        if match is not None:
            codes.add(match.group(1))
    return codes


def _bound_heads(node: cst.Import | cst.ImportFrom) -> set[str]:
    if isinstance(node.names, cst.ImportStar):
        return set()
    heads = set()
    for alias in node.names:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            heads.add(alias.asname.name.value)
        else:
            heads.add((dotted(alias.name) or "").split(".")[0])
    return heads


def _mentions_query(node: cst.BaseExpression) -> bool:
    """Cheap gate before evaluating an assignment's value: it calls or reads something."""
    return isinstance(node, (cst.Call, cst.BooleanOperation, cst.UnaryOperation, cst.Comparison, cst.Attribute))


def _guarded(tree: TreeIndex, statement: cst.CSTNode, guards: frozenset[str] = _GUARDS) -> bool:
    """Inside the body of a ``try`` with a bare ``except`` or one catching a name in ``guards``."""
    child, current = statement, tree.parents.get(statement)
    while current is not None:
        if isinstance(current, cst.Try) and child is current.body:
            for handler in current.handlers:
                caught = handler.type
                if caught is None:
                    return True
                names = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
                if any((dotted(name) or "").split(".")[-1] in guards for name in names):
                    return True
        child, current = current, tree.parents.get(current)
    return False


def _catches_import_errors(node: cst.Try) -> bool:
    """A handler of ``node`` catches ImportError: bare, ImportError/ModuleNotFoundError or broader."""
    for handler in node.handlers:
        caught = handler.type
        if caught is None:
            return True
        names = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
        if any((dotted(name) or "").split(".")[-1] in _GUARDS for name in names):
            return True
    return False


def _imports_absent(node: cst.Import | cst.ImportFrom) -> bool:
    if isinstance(node, cst.ImportFrom):
        module = dotted(node.module) if node.module is not None and not node.relative else None
        return module is not None and module.split(".")[0] in _ABSENT_ON_NEURON
    return any((dotted(alias.name) or "").split(".")[0] in _ABSENT_ON_NEURON for alias in node.names)


def _within(tree: TreeIndex, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
    return any(current is ancestor for current in _ancestors(tree, node))


def _in_annotation(tree: TreeIndex, node: cst.CSTNode) -> bool:
    for current in _ancestors(tree, node):
        if isinstance(current, cst.Annotation):
            return True
        if isinstance(current, _STATEMENTS):
            return False
    return False


def _release(node: cst.BaseExpression) -> tuple[int, int] | None:
    """``"2.4.0"``, ``parse("2.4")``, ``(2, 3)`` as (major, minor); None for anything else."""
    if isinstance(node, cst.Call) and len(node.args) == 1:
        node = node.args[0].value
    if isinstance(node, cst.Tuple) and len(node.elements) >= 2:
        numbers = [e.value.value for e in node.elements[:2] if isinstance(e.value, cst.Integer)]
        return (int(numbers[0]), int(numbers[1])) if len(numbers) == 2 else None
    text = string_value(node)
    found = _VERSION.match(text) if text is not None else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def _accelerator_default(tree: TreeIndex, node: cst.CSTNode) -> bool:
    """``getattr(torch.accelerator.current_accelerator(), "type", "cuda")``: the present
    accelerator's type, "cuda" only where there is none (a CPU-only host, as the original was)."""
    arg = tree.parents.get(node)
    call = tree.parents.get(arg) if isinstance(arg, cst.Arg) else None
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "getattr" and len(call.args) == 3):
        return False
    target = call.args[0].value
    return call.args[2] is arg and isinstance(target, cst.Call) and (dotted(target.func) or "").endswith("accelerator.current_accelerator")


def _names_backends(tree: TreeIndex, node: cst.CSTNode) -> bool:
    """A string in a list/tuple/set literal that also names another accelerator (``['cuda', 'cpu',
    'xpu', 'npu', ...]``): a registry's list of backend names, not a device choice."""
    element = tree.parents.get(node)
    container = tree.parents.get(element) if isinstance(element, cst.Element) else None
    if not isinstance(container, (cst.List, cst.Tuple, cst.Set)):
        return False
    return any((string_value(e.value) or "").lower() in _OTHER_BACKENDS for e in container.elements)


def _is_compared(tree: TreeIndex, node: cst.CSTNode) -> bool:
    """A string that is tested against, not used: a comparison operand (``in`` lists included), a
    ``.startswith(...)`` argument, a dict key or a subscript key."""
    current, parent = node, tree.parents.get(node)
    while isinstance(parent, _ELEMENTS):
        current, parent = parent, tree.parents.get(parent)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
        return True
    if isinstance(parent, cst.DictElement) and parent.key is current:
        return True
    if isinstance(parent, cst.Index):
        return True  # d["cuda"] (environment variable names are checked before this)
    if isinstance(parent, cst.Arg):
        call = tree.parents.get(parent)
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in _COMPARE_METHODS:
            return True
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in _KEY_METHODS:
            return call.args[0] is parent and parent.keyword is None  # state.get("cuda"): a key, not a device
    return False


_SETTING_NAME = re.compile(r"(?i)(^|_)(device|devices|dev|device_type|device_map|map_location|accelerator|backend|dist_backend|ddp_backend)(_|$)")
_TEXT_CALLS = frozenset({"print", "format", "write", "info", "debug", "warning", "warn", "error", "log", "append", "join", "echo", "set_description", "set_postfix"})


def _is_setting(tree: TreeIndex, node: cst.CSTNode) -> bool:
    """Whether a string is used as a device/backend value rather than as text: a call argument
    (not of print/logging), a keyword, a return value, or assigned to / keyed by / the default of
    a name that says it holds a device or backend. Ternary branches pass through."""
    current, parent = node, tree.parents.get(node)
    while isinstance(parent, (cst.IfExp, cst.Element, cst.Tuple, cst.List)) and not (
        isinstance(parent, cst.IfExp) and parent.test is current
    ):
        current, parent = parent, tree.parents.get(parent)
    if isinstance(parent, cst.Arg):
        if parent.keyword is not None:
            return True
        call = tree.parents.get(parent)
        name = dotted(call.func) if isinstance(call, cst.Call) else None
        return not (name and name.split(".")[-1] in _TEXT_CALLS)
    if isinstance(parent, cst.Return):
        return True
    if isinstance(parent, cst.Assign):
        return any(_SETTING_NAME.search((dotted(t.target) or "").split(".")[-1]) for t in parent.targets)
    if isinstance(parent, (cst.AnnAssign, cst.AugAssign)):
        return bool(_SETTING_NAME.search((dotted(parent.target) or "").split(".")[-1]))
    if isinstance(parent, cst.DictElement) and parent.value is current:
        key = string_value(parent.key)
        return key is not None and bool(_SETTING_NAME.search(key))
    if isinstance(parent, cst.Param):
        return bool(_SETTING_NAME.search(parent.name.value))
    return False


def _names_nvidia_smi(tree: TreeIndex, call: cst.Call) -> bool:
    for arg in call.args:
        for node in tree.walk(arg):
            if isinstance(node, cst.SimpleString) and cuda_only.NVIDIA_SMI in node.value:
                return True
            if isinstance(node, cst.FormattedStringText) and cuda_only.NVIDIA_SMI in node.value:
                return True
    return False


def _short(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


__all__ = ["Verifier", "bind_problem", "had_fallback", "marker_comments", "verify_port", "verify_tree"]
