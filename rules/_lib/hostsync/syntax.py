"""Syntax questions the host-sync analysis asks of one file, walked through its TreeIndex.

Every function takes the file's ``TreeIndex`` explicitly (``rules/_lib/tree.child_index``):
``node.children`` rebuilds the node on every call, the index reads the fields once. A node built
by a rule (not in the original tree) falls back to ``node.children`` inside the index.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import libcst as cst

from porter.engine.fastcst.walk import TreeIndex
from porter.engine.rule import Rule
from porter.rules._lib.hostsync.model import EXIT_CALLS, SYNC_METHODS
from porter.rules._lib.nodes import dotted, method_name

_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# Reductions whose result is a count when applied to booleans or indices.
_COUNTS = frozenset({"sum", "count_nonzero"})
_BOOLEAN_METHODS = frozenset({"eq", "ne", "ge", "gt", "le", "lt", "isnan", "isinf", "isfinite", "bool"})


def iter_nodes(index: TreeIndex, node: cst.CSTNode, *, into_scopes: bool = False) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` (pre-order), not entering nested defs/classes/lambdas unless asked."""
    if into_scopes:
        yield from index.walk(node)
        return
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and isinstance(current, _SCOPES):
            continue
        stack.extend(reversed(index.of(current)))


def _is_string(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def is_interval_test(index: TreeIndex, test: cst.BaseExpression) -> bool:
    """``step % N == 0``, ``i == len(loader) - 1``: a branch that does not run every step.

    A rank test (``rank == 0``) picks a process, not a step: not an interval.
    An ``==`` against a string (``device == "cuda"``) is a device or mode test, not an interval:
    the device rules port it (to ``!= "cpu"`` in accelerator style), so it must not decide
    whether the branch is per-step (a second pass would see it differently).
    """
    for node in iter_nodes(index, test):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            if not _is_string(node.left):
                return True
        if isinstance(node, cst.Comparison) and not _rank_test(node):
            for target in node.comparisons:
                if isinstance(target.operator, cst.Equal) and not _is_string(target.comparator) and not _is_string(node.left):
                    return True
    return False


def skips_off_interval(index: TreeIndex, statement: cst.CSTNode) -> bool:
    """``if not should_log: return`` / ``if step % N != 0: continue``: an early exit taken on every
    step but the interval's, so the statements after it in the block run only on interval steps.
    ``should_log`` counts when each assignment to it in the enclosing function is an interval test."""
    if not isinstance(statement, cst.If) or statement.orelse is not None or not _exits(statement.body):
        return False
    test = statement.test
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = test.expression
        if isinstance(inner, cst.Name):
            values = _assigned_values(index, statement, inner.value)
            return bool(values) and all(is_interval_test(index, value) or _interval_method(value) for value in values)
        return is_interval_test(index, inner) or _interval_method(inner)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.NotEqual):
        left = test.left
        return isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Modulo) and not _is_string(left.left)
    return False


# ``metrics.should_log(step)``, ``is_log_step(step)``: a method the script names for its logging
# interval (torchtitan's MetricsProcessor.should_log is ``step == 1 or step % freq == 0``). By name.
_INTERVAL_METHOD = re.compile(r"(?i)^(should|is|time_to)_(log|print|report|display)(_step|ging)?$")


def _interval_method(value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return bool(_INTERVAL_METHOD.match(name))


def before_raise(statement: cst.CSTNode, rest: Sequence[cst.CSTNode]) -> bool:
    """``if ok: return`` followed by statements that end in ``raise``: what follows the early exit
    runs only on the way to an error (a finite check's message), not every step."""
    if not isinstance(statement, cst.If) or statement.orelse is not None or not _exits(statement.body) or not rest:
        return False
    last = rest[-1]
    small = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ()
    return isinstance(small, (list, tuple)) and bool(small) and isinstance(small[-1], cst.Raise)


def _exits(body: cst.BaseSuite) -> bool:
    """The block is only ``return`` (with no value or a constant) or ``continue``."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    if len(statements) != 1 or not isinstance(statements[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return False
    small = statements[0].body
    return len(small) == 1 and (isinstance(small[0], cst.Continue) or (isinstance(small[0], cst.Return) and small[0].value is None))


def _assigned_values(index: TreeIndex, statement: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The values assigned to ``name`` in the function (or module) that holds ``statement``."""
    scope: cst.CSTNode | None = statement
    while scope is not None and not isinstance(scope, (cst.FunctionDef, cst.Module)):
        scope = index.parents.get(scope)
    if scope is None:
        return []
    return [
        node.value
        for node in iter_nodes(index, scope)
        if isinstance(node, cst.Assign)
        and any(isinstance(target.target, cst.Name) and target.target.value == name for target in node.targets)
    ]


# ``rank == 0``, ``args.local_rank == 0``, ``dist.get_rank() == 0``: which process, not which step.
_RANK = re.compile(r"(?i)((^|[._])(local_|global_|world_)?rank|process_index|get_rank)$")


def _rank_test(node: cst.Comparison) -> bool:
    """A comparison of a process rank: its branch runs on one process every step, not every N steps."""
    for side in (node.left, *(t.comparator for t in node.comparisons)):
        target = side.func if isinstance(side, cst.Call) else side
        if _RANK.search(dotted(target) or ""):
            return True
    return False


def ends_loop_or_function(body: cst.BaseSuite, rule: Rule) -> bool:
    """The block ends in ``break``/``return``/``raise``/``sys.exit()``: a one-shot branch."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    if not statements:
        return False
    last = statements[-1]
    small = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
    if not isinstance(small, (list, tuple)) or not small:
        return False
    final = small[-1]
    if isinstance(final, (cst.Break, cst.Return, cst.Raise)):
        return True
    if isinstance(final, cst.Expr) and isinstance(final.value, cst.Call):
        return dotted(final.value.func) in EXIT_CALLS or rule.matches(final.value.func, "sys.exit", "os._exit")
    return False


def is_tensorish(node: cst.CSTNode, tensors: set[str]) -> bool:
    if isinstance(node, cst.Name):
        return node.value in tensors
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value in {"sum", "mean", "detach", "float", "max", "min", "norm"}:
            return is_tensorish(node.func.value, tensors) or isinstance(node.func.value, cst.Comparison)
    if isinstance(node, cst.BinaryOperation):
        return is_tensorish(node.left, tensors) or is_tensorish(node.right, tensors)
    return False


def sync_calls(index: TreeIndex, node: cst.CSTNode, tensors: set[str]) -> list[cst.CSTNode]:
    """Host-synchronising calls under ``node``: ``.item()``, ``.tolist()``, ``.numpy()``, ``float(t)``."""
    found: list[cst.CSTNode] = []
    for current in iter_nodes(index, node):
        if not isinstance(current, cst.Call):
            continue
        name = method_name(current)
        if name in SYNC_METHODS and not current.args:
            found.append(current)
        elif isinstance(current.func, cst.Name) and current.func.value in {"float", "int", "bool"} and len(current.args) == 1:
            if is_tensorish(current.args[0].value, tensors):
                found.append(current)
    return found


def formatted_tensors(index: TreeIndex, node: cst.CSTNode, tensors: set[str]) -> list[cst.CSTNode]:
    """Tensors formatted as text: ``{loss}`` in an f-string, ``"%f" % loss``, ``print(loss)``."""
    found: list[cst.CSTNode] = []
    for current in iter_nodes(index, node):
        if isinstance(current, cst.FormattedStringExpression) and is_tensorish(current.expression, tensors):
            found.append(current.expression)
        elif isinstance(current, cst.BinaryOperation) and isinstance(current.operator, cst.Modulo):
            if isinstance(current.left, (cst.SimpleString, cst.ConcatenatedString)):
                right = current.right
                items = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
                found.extend(item for item in items if is_tensorish(item, tensors))
        elif isinstance(current, cst.Call) and dotted(current.func) == "print":
            found.extend(arg.value for arg in current.args if is_tensorish(arg.value, tensors))
    return found


def strip_host(node: cst.BaseExpression) -> cst.BaseExpression:
    """``x.cpu().numpy()`` / ``x.item()`` / ``x.cpu().item()`` -> ``x``."""
    while (
        isinstance(node, cst.Call)
        and not node.args
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in {"item", "numpy", "cpu", "tolist"}
    ):
        node = node.func.value
    return node


def count_valued(node: cst.BaseExpression, rule: Rule) -> bool:
    """A count of booleans: ``(pred == y).sum()``, ``pred.eq(y).sum().item()``, ``torch.sum(a == b)``.

    What is accumulated decides the accumulator's type (not its first literal): only such a sum
    is an integer; ``(pred == y).float().mean()`` is a float, so is any loss.
    """
    base = strip_host(node)
    if not isinstance(base, cst.Call) or not isinstance(base.func, cst.Attribute):
        return False
    if rule.matches(base.func, "torch.sum", "torch.count_nonzero"):
        return bool(base.args) and _boolean(base.args[0].value)
    return base.func.attr.value in _COUNTS and _boolean(base.func.value)


def _boolean(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Comparison):
        return True
    if isinstance(node, cst.Call) and method_name(node) in _BOOLEAN_METHODS:
        return True
    return False


def has_comparison(index: TreeIndex, node: cst.CSTNode) -> bool:
    """Built from a comparison or an arg-max: no gradient flows through it."""
    return any(
        isinstance(n, cst.Comparison) or (isinstance(n, cst.Call) and method_name(n) in {"eq", "ne", "argmax"})
        for n in iter_nodes(index, node)
    )


def modulo_pair(index: TreeIndex, test: cst.BaseExpression, module: cst.Module) -> tuple[str, str] | None:
    """``counter % interval == 0`` anywhere in ``test`` -> (counter text, interval text)."""
    for node in iter_nodes(index, test):
        if isinstance(node, cst.Comparison) and isinstance(node.left, cst.BinaryOperation):
            left = node.left
            if (
                isinstance(left.operator, cst.Modulo)
                and len(node.comparisons) == 1
                and isinstance(node.comparisons[0].operator, cst.Equal)
                and isinstance(node.comparisons[0].comparator, cst.Integer)
                and node.comparisons[0].comparator.value == "0"
                and dotted(left.left) is not None
            ):
                return module.code_for_node(left.left), module.code_for_node(left.right)
    return None


def declared_global(index: TreeIndex, function: cst.FunctionDef, name: str) -> bool:
    for node in iter_nodes(index, function.body):
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(item.name.value == name for item in node.names):
            return True
    return False


def assigned_names(index: TreeIndex, node: cst.CSTNode) -> set[str]:
    """Names (re)bound under ``node``: assignment targets, loop targets, ``with ... as``, walrus."""
    names: set[str] = set()
    for current in iter_nodes(index, node):
        targets: list[cst.CSTNode] = []
        if isinstance(current, cst.Assign):
            targets = [t.target for t in current.targets]
        elif isinstance(current, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            targets = [current.target]
        elif isinstance(current, (cst.For, cst.CompFor)):
            targets = [current.target]
        elif isinstance(current, cst.AsName):
            targets = [current.name]
        for target in targets:
            names.update(n.value for n in iter_nodes(index, target) if isinstance(n, cst.Name))
    return names
