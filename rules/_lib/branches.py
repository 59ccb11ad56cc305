"""Which code a condition guards: a ported test changes which branch runs on Neuron (issue 15 §1).

No rule lives here. ``guarded_branch`` finds the ``if``/``elif``/``while`` (or conditional
expression) whose *test* holds a node; ``branch_nodes`` walks the code that test selects when it
is true. Rules use them to port what a newly-true branch does (values it assigns, calls it makes)
or to keep the test's old meaning when the branch cannot work on Neuron.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

import libcst as cst

from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.device import cuda_string, device_named
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.statements import block_body
from porter.rules._lib.tree import child_index
from porter.rules._tables.cuda import ACCELERATOR_ONLY, NO_EQUIVALENT, OWNED_ELSEWHERE, RENAMED, RENAMES
from porter.rules._tables.cuda_only import CUDA_ENV, ENTRIES

# nn.DataParallel and friends: single-process multi-device, CUDA-only (AWS Neuron docs, TorchNeuron distributed guide (torch/guides/torch-distributed)).
DATA_PARALLEL = (
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.data_parallel",
    "torch.nn.parallel.data_parallel.data_parallel",
)

Guard = cst.If | cst.While | cst.IfExp


def guarded_branch(rule: Rule, node: cst.CSTNode) -> Guard | None:
    """The ``if``/``while``/``x if test else y`` whose test contains ``node`` (the nearest one)."""
    child: cst.CSTNode = node
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.While, cst.IfExp)) and ancestor.test is child:
            return ancestor
        if isinstance(ancestor, (cst.BaseStatement, cst.BaseSuite, cst.Lambda)):
            return None
        child = ancestor
    return None


def true_branch(guard: Guard) -> cst.CSTNode:
    """What runs when the test is true: the ``if`` body or the conditional's first value."""
    return guard.body


def branch_nodes(rule: Rule, guard: Guard) -> Iterator[cst.CSTNode]:
    """Every node of the code whose running the guard's test decides: the true branch and the
    ``else``/``elif`` part (a test that flips on Neuron changes which of the two runs), or the rest
    of the block after an early ``return``/``raise`` (``after_early_exit``)."""
    index = child_index(rule)
    yield from index.walk(true_branch(guard))
    other = guard.orelse
    if other is not None:
        yield from index.walk(other)
    else:
        for statement in after_early_exit(rule, guard):  # what runs when an early return does not
            yield from index.walk(statement)


def after_early_exit(rule: Rule, guard: Guard) -> list[cst.BaseStatement]:
    """The statements after an ``if`` with no ``else`` whose body always leaves (``return``/
    ``raise``): they run exactly when its test is false."""
    if not isinstance(guard, cst.If) or guard.orelse is not None or not _always_leaves(guard.body):
        return []
    siblings = block_body(rule, guard)
    if siblings is None:
        return []
    return list(siblings[list(siblings).index(guard) + 1 :])


def guarding_tests(rule: Rule, node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The tests of the ``if``/``while`` blocks whose *true* branch holds ``node``, innermost first
    (an ``else`` branch is not guarded by the test: it runs when the test is false)."""
    child: cst.CSTNode = node
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.While)) and ancestor.body is child:
            yield ancestor.test
        if isinstance(ancestor, cst.IfExp) and ancestor.body is child:
            yield ancestor.test
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return
        child = ancestor


# Tests that become true on Neuron once ported (NRN103 writes them as torch.accelerator calls).
AVAILABILITY_TESTS = ("torch.cuda.is_available", "torch.cuda.device_count")


def _calls_availability(rule: Rule, expression: cst.CSTNode) -> bool:
    for inner in child_index(rule).walk(expression):
        if isinstance(inner, cst.Call) and rule.matches(inner.func, *AVAILABILITY_TESTS):
            return True
    return False


@dataclass(frozen=True)
class AvailabilityNames(FileAnalysis):
    """Dotted names the file assigns from an availability test (``args.cuda = not args.no_cuda
    and torch.cuda.is_available()``, ``use_cuda = torch.cuda.is_available()``): testing them is
    testing availability."""

    names: frozenset[str]

    @classmethod
    def compute(cls, rule: Rule) -> AvailabilityNames:
        found: set[str] = set()
        for node in child_index(rule).preorder:
            if isinstance(node, cst.Assign) and _calls_availability(rule, node.value):
                found.update(name for target in node.targets if (name := dotted(target.target)) is not None)
        return cls(frozenset(found))


def is_availability_test(rule: Rule, test: cst.CSTNode) -> bool:
    """``test`` calls ``torch.cuda.is_available()``/``device_count()`` (any spelling, any nesting:
    ``not args.no_cuda and torch.cuda.is_available()``, ``torch.cuda.device_count() > 1``), or
    reads a name the file assigns from such a call (``if args.cuda:``)."""
    if _calls_availability(rule, test):
        return True
    names = rule.analysis(AvailabilityNames).names
    return bool(names) and any(dotted(inner) in names for inner in child_index(rule).walk(test) if isinstance(inner, (cst.Name, cst.Attribute)))


def under_availability_test(rule: Rule, node: cst.CSTNode) -> bool:
    """``node`` runs only when an availability test is true (it is in such a test's true branch)."""
    return any(is_availability_test(rule, test) for test in guarding_tests(rule, node))


def checked_not_none(rule: Rule, node: cst.CSTNode, value: cst.BaseExpression) -> bool:
    """``node`` runs only where ``value`` is not None: under ``if value is not None:`` or
    ``if value:`` (also as one operand of an ``and``)."""
    wanted = dotted(value)
    if wanted is None:
        return False
    for test in guarding_tests(rule, node):
        for inner in _conjuncts(test):
            if dotted(inner) == wanted:
                return True
            if (
                isinstance(inner, cst.Comparison)
                and len(inner.comparisons) == 1
                and isinstance(inner.comparisons[0].operator, cst.IsNot)
                and dotted(inner.left) == wanted
                and dotted(inner.comparisons[0].comparator) == "None"
            ):
                return True
    return False


def _conjuncts(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        yield from _conjuncts(test.left)
        yield from _conjuncts(test.right)
    else:
        yield test


# ----------------------------------------------------------------------------------------------
# Device-type tests whose CUDA branch is CUDA-only (corpus review W1): porting the test would make
# that branch run on Neuron, where it fails or does what Neuron does not want; the old meaning
# ("skip it off CUDA") is already right there. The test is kept and the branch is not ported.

# Qualified-name prefixes of code that only works on (or only makes sense for) CUDA, besides the
# CUDA-only libraries of ``rules/_tables/cuda_only.py`` and ``torch.cuda`` names without a Neuron
# counterpart.
_CUDA_ONLY_PREFIXES = ("torch.utils._triton", "torch._inductor", "triton")
# torchtune's get_memory_stats reads torch.cpu for a neuron device (torchtune/training/memory.py:266,
# its device namespace knows cuda/npu/xpu/mps): a `device.type == "cuda"` guard around it stays.
_CUDA_ONLY_NAMES = frozenset({
    "torch.channels_last", "torch.channels_last_3d", *DATA_PARALLEL,
    "torchtune.training.get_memory_stats", "torchtune.training.memory.get_memory_stats",
})
_CUDA_PREFIX = "torch.cuda."
# Library calls that are CUDA-only when a flag argument turns a feature on: (position, keyword) of
# the flag. torchtune 0.6.1's OffloadActivations makes CUDA streams (torch.cuda.default_stream(),
# torchtune/training/_activation_offloading.py:93), built by get_act_offloading_ctx_manager(model,
# enable_activation_offloading) (:373-394) when the flag is true.
CUDA_ONLY_WHEN_ENABLED: dict[str, tuple[int, str]] = {
    "torchtune.training.get_act_offloading_ctx_manager": (1, "enable_activation_offloading"),
    "torchtune.training._activation_offloading.get_act_offloading_ctx_manager": (1, "enable_activation_offloading"),
}


def cuda_only_name(rule: Rule, node: cst.CSTNode) -> str | None:
    """The qualified name of a CUDA-only API ``node`` refers to, or the CUDA/NCCL environment
    variable a string literal names; None otherwise."""
    if isinstance(node, cst.SimpleString):
        value = string_value(node)
        return value if value is not None and CUDA_ENV.match(value) else None
    if isinstance(node, cst.ImportFrom):
        module = dotted(node.module) if node.module is not None else None
        return module if module is not None and module.startswith(_CUDA_ONLY_PREFIXES) else None
    if not isinstance(node, (cst.Name, cst.Attribute)):
        return None
    for name in rule.qualified(node):
        if name in _CUDA_ONLY_NAMES or name.startswith(_CUDA_ONLY_PREFIXES):
            return name
        if any(entry.covers(name) for entry in ENTRIES):
            return name
        if name.startswith(_CUDA_PREFIX):
            head = name[len(_CUDA_PREFIX) :].split(".")[0]
            if head == "memory_stats" and memory_stats_key(rule, node) is not None:
                return name  # read with CUDA allocator keys: kept (and marked) by NRN104, so CUDA-only
            if head in OWNED_ELSEWHERE:  # other rules port it (torch.cuda.amp, OOM, tensor types)
                continue
            if head in NO_EQUIVALENT or (head not in RENAMES and head not in RENAMED and head not in ACCELERATOR_ONLY):
                return name
    return None


def memory_stats_key(rule: Rule, node: cst.CSTNode) -> str | None:
    """The string key a ``torch.cuda.memory_stats()`` result is read with: directly
    (``memory_stats()["k"]``) or through the name it is assigned to in the same function
    (``stats = memory_stats()`` ... ``stats["k"]``). None when no key is read. The keys are
    CUDA caching-allocator keys, so such a call stays CUDA (corpus review W8/H9)."""
    call = rule.parent(node)
    if not isinstance(call, cst.Call) or call.func is not node:
        return None
    holder = rule.parent(call)
    if isinstance(holder, cst.Subscript):
        return _string_key(holder)
    if not (isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name)):
        return None
    name = holder.targets[0].target.value
    scope = next((a for a in rule.ancestors(holder) if isinstance(a, cst.FunctionDef)), rule.context.module)
    for inner in child_index(rule).walk(scope):
        if isinstance(inner, cst.Subscript) and isinstance(inner.value, cst.Name) and inner.value.value == name:
            key = _string_key(inner)
            if key is not None:
                return key
    return None


def _string_key(subscript: cst.Subscript) -> str | None:
    """``x["key"]`` -> ``key`` (a single string-literal index), else None."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    return string_value(subscript.slice[0].slice.value)


def _cuda_side(rule: Rule, guard: Guard) -> list[cst.CSTNode] | None:
    """The code a device-type test against a CUDA literal selects on CUDA: the true branch of
    ``device.type == "cuda"`` / ``in ("cuda", ...)`` / ``x.is_cuda``, the ``else`` of ``!=`` /
    ``not in`` / ``not x.is_cuda``, and the other way round under a ``not`` (``if not (device_type
    == "cuda" and torch.cuda.is_available()):``). Where that is the ``else`` of an ``if`` whose body
    always leaves (an early ``return``/``raise``: corpus review H11, torchtitan's CUDA-graph
    wrapper), it is the rest of the block after the ``if``. None when the test is no such
    comparison or selects nothing."""
    on_true = _cuda_on_true(rule, guard)
    return None if on_true is None else _side(rule, guard, on_true=on_true)


def _cuda_on_true(rule: Rule, guard: Guard) -> bool | None:
    """For a device-type test against a CUDA literal (``_cuda_side``): whether CUDA takes its true
    branch; None for any other test."""
    for inner in child_index(rule).walk(guard.test):
        if isinstance(inner, cst.Attribute) and inner.attr.value == "is_cuda":  # x.is_cuda / not x.is_cuda
            return not _negated(rule, inner, guard)
        if not isinstance(inner, cst.Comparison) or len(inner.comparisons) != 1:
            continue
        target = inner.comparisons[0]
        operands = [inner.left, target.comparator]
        if not any(device_named(operand) for operand in operands):
            continue
        literals = [
            element.value
            for operand in operands
            for element in (operand.elements if isinstance(operand, (cst.Tuple, cst.Set, cst.List)) else ())
        ]
        if not any(cuda_string(value) for value in [*operands, *literals]):
            continue
        if isinstance(target.operator, (cst.Equal, cst.In, cst.NotEqual, cst.NotIn)):
            positive = isinstance(target.operator, (cst.Equal, cst.In))
            return positive != _negated(rule, inner, guard)
    return None


def _negated(rule: Rule, node: cst.CSTNode, guard: Guard) -> bool:
    """An odd number of ``not`` between ``node`` and the guard's test."""
    flips = False
    for ancestor in rule.ancestors(node):
        if ancestor is guard:
            break
        if isinstance(ancestor, cst.UnaryOperation) and isinstance(ancestor.operator, cst.Not):
            flips = not flips
    return flips


def _side(rule: Rule, guard: Guard, on_true: bool) -> list[cst.CSTNode] | None:
    if on_true:
        return [true_branch(guard)]
    if guard.orelse is not None:
        return [guard.orelse]
    return list(after_early_exit(rule, guard)) or None


def _always_leaves(body: cst.BaseSuite) -> bool:
    """The block ends in ``return``/``raise`` (its last simple statement)."""
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return False
    last = body.body[-1]
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Raise))


# Vendor tooling (corpus review W1b): a callee whose last name part says NVLink, NCCL, cuDNN,
# cuBLAS, NVML, NVIDIA or ROCm (``check_nvlink_connectivity``) checks or tunes the GPU vendor's
# stack; it means nothing on Neuron. Command lines of the vendors' tools, named in string literals:
_VENDOR_CALLEE = re.compile(r"(?i)(nvlink|nccl|cudnn|cublas|nvml|nvidia|rocm)")
_VENDOR_TOOLS = ("nvidia-smi", "rocm-smi", "nvcc", "nvlink")


def _vendor_callee(name: str) -> bool:
    return bool(_VENDOR_CALLEE.search(name.split(".")[-1]))


def _local_functions(rule: Rule) -> dict[str, cst.FunctionDef]:
    """Module-level functions of this file, by name (the callees a branch can be followed into)."""
    return {
        statement.name.value: statement for statement in rule.context.module.body if isinstance(statement, cst.FunctionDef)
    }


def _local_definitions(rule: Rule) -> dict[str, cst.FunctionDef | cst.ClassDef]:
    """Module-level functions and classes of this file, by name."""
    return {
        statement.name.value: statement
        for statement in rule.context.module.body
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef))
    }


def local_cuda_only_use(
    rule: Rule, node: cst.CSTNode, definitions: dict[str, cst.FunctionDef | cst.ClassDef] | None = None
) -> tuple[str, str] | None:
    """(callee, CUDA-only API) when ``node`` calls a function or builds a class of this file whose
    body names a CUDA-only API (torchtitan's guard, corpus review round 7: the code after the
    early return builds ``CUDAGraphWrapper``, whose ``__init__`` captures a
    ``torch.cuda.CUDAGraph``); None otherwise. One level deep."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Name):
        return None
    definition = (definitions if definitions is not None else _local_definitions(rule)).get(node.func.value)
    if definition is None:
        return None
    for inner in child_index(rule).walk(definition.body):
        name = cuda_only_name(rule, inner)
        if name is not None:
            return node.func.value, name
    return None


def _cuda_only_function(rule: Rule, function: cst.FunctionDef, local: dict[str, cst.FunctionDef]) -> bool:
    """A function of this file that is itself CUDA-only: its body names a CUDA-only API
    (``cuda_only_name``), a vendor tool's command line (``"nvidia-smi"``, ``"rocm-smi"``) or calls
    vendor tooling (one level deep: a local callee is not followed further)."""
    for inner in child_index(rule).walk(function.body):
        if cuda_only_name(rule, inner) is not None:
            return True
        value = string_value(inner) if isinstance(inner, cst.SimpleString) else None
        if value is not None and any(tool in value for tool in _VENDOR_TOOLS):
            return True
        if isinstance(inner, cst.Call) and (callee := dotted(inner.func)) is not None and callee not in local and _vendor_callee(callee):
            return True
    return False


def _vendor_call(rule: Rule, node: cst.BaseExpression, local: dict[str, cst.FunctionDef]) -> bool:
    """``node`` is a call of CUDA-vendor tooling: a callee named for it, or a function of this
    file that is itself CUDA-only."""
    if not isinstance(node, cst.Call) or (callee := dotted(node.func)) is None:
        return False
    if callee in local:
        return _cuda_only_function(rule, local[callee], local)
    return _vendor_callee(callee)


def _only_vendor_calls(rule: Rule, branch: cst.CSTNode, local: dict[str, cst.FunctionDef]) -> bool:
    """Every statement of ``branch`` calls CUDA-vendor tooling (``check_nvlink_connectivity(f)``,
    ``ok = nccl_check()``); ``pass`` is allowed, anything else (a device pick, a seed) is not."""
    if isinstance(branch, cst.BaseExpression):
        return _vendor_call(rule, branch, local)
    if not isinstance(branch, cst.IndentedBlock | cst.SimpleStatementSuite):
        return False
    lines = branch.body if isinstance(branch, cst.IndentedBlock) else [branch]
    found = False
    for line in lines:
        if not isinstance(line, cst.SimpleStatementLine | cst.SimpleStatementSuite):
            return False
        for small in line.body:
            if isinstance(small, cst.Pass):
                continue
            value = small.value if isinstance(small, cst.Expr | cst.Assign) else None
            if value is None or not _vendor_call(rule, value, local):
                return False
            found = True
    return found


def _only_cuda_only(rule: Rule, branch: cst.CSTNode) -> bool:
    """Every statement of ``branch`` is CUDA-only code (``cuda_only_name``) or reads what such a
    statement of the branch assigned (``stats = torch.cuda.memory_stats()`` then
    ``retries = stats["num_alloc_retries"]``, corpus review H9): the branch has nothing to run on
    Neuron, so its availability test keeps its CUDA meaning. A branch that also picks a device or
    does other work is not one (its test is ported and the CUDA-only parts are marked)."""
    if not isinstance(branch, cst.IndentedBlock):
        return False
    index = child_index(rule)
    held: set[str] = set()
    found = False
    for line in branch.body:
        if not isinstance(line, cst.SimpleStatementLine):
            return False
        for small in line.body:
            if isinstance(small, cst.Pass):
                continue
            inner = list(index.walk(small))
            if any(cuda_only_name(rule, node) is not None for node in inner):
                found = True
                if isinstance(small, cst.Assign):
                    held |= {t.target.value for t in small.targets if isinstance(t.target, cst.Name)}
            elif not any(isinstance(node, cst.Name) and node.value in held for node in inner):
                return False
    return found


def _gate_flags(rule: Rule, guard: cst.If, body: cst.CSTNode) -> set[str] | None:
    """What a feature gate turns off or refuses: ``body`` (the true branch of a test CUDA does not
    take: ``if flag and D.type != "cuda":``) only logs, raises
    and sets names to False/None, and does one of the last two. The flags: the names it sets, the
    plain names of the test's ``and`` (``flag and D.type != "cuda"``) and of the ``if`` right around
    the gate (``if flag:`` then the gate). None when ``body`` is no such gate."""
    if not isinstance(body, cst.IndentedBlock):
        return None
    flags: set[str] = set()
    acts = False
    for line in body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            return None
        for small in line.body:
            if isinstance(small, cst.Raise):
                acts = True
            elif isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value in ("False", "None"):
                acts = True
                flags |= {name for t in small.targets if (name := dotted(t.target)) is not None}
            elif not isinstance(small, (cst.Expr, cst.Pass)) or (isinstance(small, cst.Expr) and not isinstance(small.value, cst.Call)):
                return None
    if not acts:
        return None
    flags |= {name for test in _conjuncts(guard.test) if (name := dotted(test)) is not None}
    block = rule.parent(guard)
    owner = rule.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if isinstance(owner, cst.If) and owner.body is block:
        flags |= {name for test in _conjuncts(owner.test) if (name := dotted(test)) is not None}
    return flags


def _flag_word(name: str) -> str:
    """A flag's own word: ``self._enable_activation_offloading`` and the parameter
    ``enable_activation_offloading`` it is handed to (torchtune's ``_setup_model``) are one flag."""
    return name.split(".")[-1].lstrip("_")


def _cuda_only_flags(rule: Rule) -> set[str]:
    """Names (as spelled) of flags that turn on CUDA-only code in this file: the test of an ``if``
    whose true branch names a CUDA-only API (``if log_peak_memory_stats: ... get_memory_stats(...)``),
    or the flag argument of a ``CUDA_ONLY_WHEN_ENABLED`` call."""
    index = child_index(rule)
    flags: set[str] = set()
    for node in index.preorder:
        if isinstance(node, cst.If):
            if any(cuda_only_name(rule, inner) is not None for inner in index.walk(node.body)):
                flags |= {name for test in _conjuncts(node.test) if (name := dotted(test)) is not None}
        elif isinstance(node, cst.Call):
            spec = next((CUDA_ONLY_WHEN_ENABLED[n] for n in rule.qualified(node.func) if n in CUDA_ONLY_WHEN_ENABLED), None)
            if spec is None:
                continue
            position, name = spec
            plain = [a for a in node.args if a.keyword is None and not a.star]
            arg = next((a for a in node.args if a.keyword is not None and a.keyword.value == name), None)
            arg = arg or (plain[position] if len(plain) > position else None)
            if arg is not None and (flag := dotted(arg.value)) is not None:
                flags.add(flag)
    return flags


@dataclass(frozen=True)
class CudaOnlyBranches(FileAnalysis):
    """The device-type tests (``if device.type == "cuda":``) whose CUDA branch holds CUDA-only
    code (``cuda_only_name``), and the availability tests (``if torch.cuda.is_available() and
    devices > 1:``) whose true branch only calls CUDA-vendor tooling (``_only_vendor_calls``) or
    holds only CUDA-only code (``_only_cuda_only``), and feature gates (``if flag and D.type !=
    "cuda": flag = False`` / ``raise``) of a flag that turns on CUDA-only code (``_cuda_only_flags``;
    flags matched by their last name part, leading underscores dropped: ``_flag_word``):
    ``tests`` are the guards (kept as they are: ``torch.cuda.is_available()`` is False on Neuron
    and exists on every build), ``branches`` the code they select on CUDA (not ported, no Neuron
    advice). Node ids of this file's tree."""

    tests: frozenset[int]
    branches: frozenset[int]

    @classmethod
    def compute(cls, rule: Rule) -> CudaOnlyBranches:
        index = child_index(rule)
        tests: set[int] = set()
        branches: set[int] = set()
        local: dict[str, cst.FunctionDef] | None = None
        definitions: dict[str, cst.FunctionDef | cst.ClassDef] | None = None
        cuda_flags: set[str] | None = None
        # The per-type buckets of the index, not an isinstance over every node: libcst's node
        # classes are ABCs, and that test over a file's whole pre-order was 23 of 461 s profiled.
        for node in cast("list[cst.If | cst.While | cst.IfExp]", index.find(index.root, cst.If, cst.While, cst.IfExp)):
            on_true = _cuda_on_true(rule, node)
            sides = None if on_true is None else _side(rule, node, on_true)
            flags = _gate_flags(rule, node, node.body) if on_true is False and isinstance(node, cst.If) else None
            if flags:
                cuda_flags = _cuda_only_flags(rule) if cuda_flags is None else cuda_flags
                if {_flag_word(f) for f in flags} & {_flag_word(f) for f in cuda_flags}:
                    # A feature gate (corpus review accelerator round 4, torchtune's recipes): the
                    # feature is CUDA-only, so the test keeps its meaning; the code after it is not
                    # CUDA's alone (no branch is kept).
                    tests.add(id(node))
                    continue
            if sides is not None:
                if not kernel_file(rule):  # a kernel file keeps every device-type test (KernelFile)
                    inner_nodes = [inner for side in sides for inner in index.walk(side)]
                    if not any(cuda_only_name(rule, inner) is not None for inner in inner_nodes):
                        definitions = _local_definitions(rule) if definitions is None else definitions
                        if not any(local_cuda_only_use(rule, inner, definitions) is not None for inner in inner_nodes):
                            continue
                tests.add(id(node))
                branches.update(id(side) for side in sides)
            elif _calls_availability(rule, node.test):
                local = _local_functions(rule) if local is None else local
                if _only_vendor_calls(rule, true_branch(node), local) or _only_cuda_only(rule, true_branch(node)):
                    tests.add(id(node))
                    branches.add(id(true_branch(node)))
        return cls(frozenset(tests), frozenset(branches))


# Kernel languages that target CUDA (and ROCm/XPU) only: a file that imports one writes GPU kernels.
# torch.utils.cpp_extension builds native extensions: its CUDA tests pick nvcc and CUDA sources over the
# C++ compiler (deepspeed's op builders: `build_for_cpu = not torch.cuda.is_available()`, corpus review
# 2026-12-06), and a Neuron host has no nvcc: it builds what a CPU-only host built.
_KERNEL_LANGUAGES = ("triton", "helion", "numba.cuda", "torch.utils.cpp_extension")


@dataclass(frozen=True)
class KernelFile(FileAnalysis):
    """Whether the file imports a CUDA kernel language or extension builder (``_KERNEL_LANGUAGES``).
    Its device-type tests choose between its kernels and a torch path (trl's chunked logprob, torchtitan's fused MLA
    and Helion RoPE, corpus review 2026-12-06), often through a custom op, an
    ``autograd.Function`` or an eligibility predicate (``return x.is_cuda and ...``) that no branch
    walk can follow: each is kept, so Neuron takes the torch path, which ran on the CPU before.
    ``users``: the file's top-level statements (functions, classes) that import one or use a name
    such an import binds (``load``, ``tl``): there an availability test picks the kernels too."""

    launches: bool
    users: frozenset[int] = frozenset()

    @classmethod
    def compute(cls, rule: Rule) -> KernelFile:
        index = child_index(rule)
        imports: list[cst.Import | cst.ImportFrom] = []
        bound: set[str] = set()
        for node in cast("list[cst.Import | cst.ImportFrom]", index.find(index.root, cst.Import, cst.ImportFrom)):
            names: list[str | None] = []
            if isinstance(node, cst.ImportFrom):
                names = [dotted(node.module)] if node.module is not None and not node.relative else []
                if names and not isinstance(node.names, cst.ImportStar):  # from numba import cuda, from torch.utils import cpp_extension
                    names += [f"{names[0]}.{alias.name.value}" for alias in node.names if isinstance(alias.name, cst.Name)]
                    if names[0] == "numba":
                        names = names[1:]  # numba alone compiles for the CPU too
            elif isinstance(node, cst.Import):
                names = [dotted(alias.name) for alias in node.names]
            if any(name and (name == lang or name.startswith(lang + ".")) for name in names for lang in _KERNEL_LANGUAGES):
                imports.append(node)
                aliases = node.names if not isinstance(node.names, cst.ImportStar) else ()
                for alias in aliases:
                    asname = alias.asname.name if alias.asname is not None else None
                    bound.add(asname.value if isinstance(asname, cst.Name) else alias.evaluated_name.split(".")[0])
        if not imports:
            return cls(False)
        top = {id(s): s for s in rule.context.module.body}
        users: set[int] = set()
        found: list[cst.CSTNode] = [*imports]
        found += [n for n in index.find(index.root, cst.Name) if isinstance(n, cst.Name) and n.value in bound]
        for use in found:
            current: cst.CSTNode | None = use
            while current is not None and id(current) not in top:
                current = rule.parent(current)
            if current is not None and isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                users.add(id(current))
        return cls(True, frozenset(users))


def kernel_file(rule: Rule) -> bool:
    """The file writes or builds CUDA kernels (``KernelFile``): its CUDA tests choose them."""
    return rule.analysis(KernelFile).launches


def in_kernel_user(rule: Rule, node: cst.CSTNode) -> bool:
    """``node`` is in a top-level function or class of a kernel file that imports or uses the kernel
    language (``KernelFile.users``): deepspeed's op builder class, not the training loop beside it."""
    users = rule.analysis(KernelFile).users
    return bool(users) and any(id(ancestor) in users for ancestor in rule.ancestors(node))


def _kernel_device_test(rule: Rule, node: cst.CSTNode) -> bool:
    """``node`` is a device-type test of a kernel file (``KernelFile``): an ``x.is_cuda`` read, or in
    a comparison of a device with a CUDA literal (``device.type in ("cuda", "xpu")``)."""
    if not kernel_file(rule):
        return False
    if isinstance(node, cst.Attribute) and node.attr.value == "is_cuda":
        return True
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, (cst.BaseStatement, cst.BaseSuite, cst.Lambda, cst.Call)):
            return False
        if isinstance(ancestor, cst.Comparison) and len(ancestor.comparisons) == 1:
            operands = [ancestor.left, ancestor.comparisons[0].comparator]
            return any(device_named(operand) for operand in operands)
    return False


def in_kept_cuda_test(rule: Rule, node: cst.CSTNode) -> bool:
    """``node`` is inside the test of a device-type guard kept for its CUDA-only branch, or is a
    device-type test of a file that launches CUDA kernels (``KernelFile``)."""
    guard = guarded_branch(rule, node)
    if guard is not None and id(guard) in rule.analysis(CudaOnlyBranches).tests:
        return True
    return _kernel_device_test(rule, node)


def in_kept_cuda_branch(rule: Rule, node: cst.CSTNode) -> bool:
    """``node`` runs only on CUDA: it is in the CUDA branch of a kept device-type guard."""
    branches = rule.analysis(CudaOnlyBranches).branches
    return bool(branches) and any(id(ancestor) in branches for ancestor in rule.ancestors(node))
