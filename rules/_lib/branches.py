"""Which code a condition guards: a ported test changes which branch runs on Neuron (issue 15 §1).

No rule lives here. ``guarded_branch`` finds the ``if``/``elif``/``while`` (or conditional
expression) whose *test* holds a node; ``branch_nodes`` walks the code that test selects when it
is true. Rules use them to port what a newly-true branch does (values it assigns, calls it makes)
or to keep the test's old meaning when the branch cannot work on Neuron.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.nodes import dotted
from porter.rules._lib.tree import child_index

# nn.DataParallel and friends: single-process multi-device, CUDA-only (facts §1.5).
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
    ``else``/``elif`` part (a test that flips on Neuron changes which of the two runs)."""
    index = child_index(rule)
    yield from index.walk(true_branch(guard))
    other = guard.orelse
    if other is not None:
        yield from index.walk(other)


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
