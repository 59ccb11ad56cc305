"""Metrics a step loop reads from the device only for a logger that may not exist: read them only when it does.

    metrics_to_log = {"loss": loss.cpu(), **loss_vals.cpu()}
    ...
    log_metrics(logger, metrics_to_log, i)     # utils.py: if logger is not None: logger.log_metrics(...)

Every step copies the values to the host (a host sync each), and without a logger nothing reads
them. The statements that read device values into the dict then run only when there is a logger:
``metrics_to_log = {...} if logger is not None else {}``, ``if logger is not None:
metrics_to_log.update({...})``. With a logger the loop logs, and syncs, as before.

When it applies (each condition is what makes the values unread without a logger):
- a train step loop, or a loop of its function around one (a loop over collected batches around the
  update loop), binds a name to a dict literal (``M = {...}``) in a statement of its own, in its body or
  in a ``with`` block there; the function binds that name nowhere else in the loop, and outside it
  only by ``M = <value>`` statements of their own (``M = dict(restored)`` before the loop);
- every other use of the name is in a statement that runs after it in the same iteration (the rest of
  its block and of the blocks around it, up to the loop body): ``M.update(...)`` or
  ``M[key] = value`` as a statement of its own (writes), or the argument of a *consumer* call, made as a
  statement of its own; or a consumer call after the loop (the rest of the blocks around the loop, up
  to the function's end: it reads the last iteration's dict), never one before it, nor in a loop around
  it before it (the next pass would read the last dict);
- a consumer is a call of a function (of this file, or of a project module the file imports: ``from
  utils import log_metrics``) whose body, docstring aside, is one ``if P is not None:`` or ``if P:``
  with no ``else``, or starts with ``if <test>: return`` (or ``return None``) where the test holds
  whenever ``P`` is None (``P is None``, ``not P``, ``P in (None, "")``, or an ``or`` with one of
  these), with a name ``L`` passed as its parameter ``P``; or any call in the body of an ``if L:``,
  ``if L is not None:`` or ``if L and ...:`` of the loop, or after it (``logger.log_metrics(M, i)``,
  ``save(ckpt, metrics=M)`` under ``if ckpt and i % every == 0``). The guard is ``L is not None`` for
  the one name, ``L1 is not None or L2 is not None`` for several;
- a statement the rule guards (the binding or a write) reads device values (``.cpu()``, ``.item()``,
  ``.tolist()``, ``.numpy()``) and only reads (``intervals.reads_only``), so skipping it skips no effect.

A value read both by such a statement and by a log that moves under the logging interval
(``loss_val = loss.item()`` shown by ``pbar.set_postfix`` every step and put in the dict) becomes a
feeder of that log (``intervals.py``): it stays on the device, and the guarded statement reads it
with ``.item()`` as the log does.

The names the guard tests are bound nowhere in the loop (no assignment, import, ``def``, loop target...),
nor after it when a consumer after the loop reads the dict, and declared ``global``/``nonlocal``
nowhere in the file (a function the loop calls could set them); a
helper callee is a name bound only by its ``def`` or its import (``rules/_lib/imports.project_function``).

A review change: without a logger, the dict holds only what the unguarded writes put in it, and what
a guarded statement would have raised no longer happens (``.item()`` of a tensor of several elements,
a division by zero, a missing key). A read the file does not spell with the dict's name
(``locals()["metrics"]``, ``eval``) is not seen.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from porter.rules._lib.hostsync.intervals import reads_only
from porter.rules._lib.hostsync.model import REFRESHED, SYNC_METHODS, UNLOGGED, Site, StepLoop
from porter.rules._lib.hostsync.scope import FileScope
from porter.rules._lib.hostsync.syntax import iter_nodes
from porter.rules._lib.imports import name_binders, project_function
from porter.rules._lib.nodes import is_docstring, method_name

_DEVICE_READS = SYNC_METHODS | {"cpu"}
UNLOGGED_CODE = "NRN612"  # the guards of metrics read only for a logger


@dataclass
class Unlogged:
    """Guard ``statements`` (the dict's binding and its writes that read device values) with
    ``if <test>``; ``claimed`` adds the ones that test already guards (a second pass)."""

    name: str  # the dict
    test: str  # ``logger is not None`` (``... or checkpoint_path is not None`` with several consumers)
    consumers: list[tuple[str, str]]  # what reads the dict, and why only when the test holds
    statements: list[cst.SimpleStatementLine]
    binding: cst.SimpleStatementLine  # the ``M = {...}`` line (guarded as ``... if <test> else {}``)
    claimed: list[cst.SimpleStatementLine]


def plan_unlogged(scope: FileScope, loops: list[StepLoop], sites: list[Site]) -> list[Unlogged]:
    """The dicts of train step loops that only a logger reads; the sites in the statements they
    guard (or the same test already guards) become UNLOGGED. A read that an interval branch
    refreshes (REFRESHED) is left to that rule."""
    plans: list[Unlogged] = []
    names: dict[int, dict[str, list[cst.Name]]] = {}  # per function: its variables' every use, one walk
    for node, function in _training_loops(scope, loops):
        assert isinstance(node.body, cst.IndentedBlock)  # _training_loops keeps only these
        for statement, later in _with_what_follows(node.body.body):
            if not _dict_binding(statement):
                continue
            if id(function) not in names:
                names[id(function)] = _uses(scope, function)
            plan = _plan(scope, node, function, statement, later, sites, names[id(function)])
            if plan is not None:
                plans.append(plan)
    claimed = [statement for plan in plans for statement in plan.claimed]
    for site in sites:
        if any(scope.within(site.node, statement) for statement in claimed):
            site.kind = UNLOGGED
    return plans


def _training_loops(scope: FileScope, loops: list[StepLoop]) -> list[tuple[cst.For | cst.While, cst.CSTNode]]:
    """The train step loops and the loops of their function around them (a loop over collected
    batches around the update loop logs once per batch), each once, with their function (or module)."""
    found: dict[int, tuple[cst.For | cst.While, cst.CSTNode]] = {}
    for loop in loops:
        if loop.kind != "train":
            continue
        function: cst.CSTNode = loop.function if loop.function is not None else scope.module
        current: cst.CSTNode | None = loop.node
        while current is not None and current is not function:
            if isinstance(current, (cst.For, cst.While)) and isinstance(current.body, cst.IndentedBlock):
                found.setdefault(id(current), (current, function))
            current = scope.parent(current)
    return list(found.values())


def _with_what_follows(body: Sequence[cst.BaseStatement], after: Sequence[cst.BaseStatement] = ()
                       ) -> Iterator[tuple[cst.BaseStatement, list[cst.BaseStatement]]]:
    """Each statement of a loop body, and of ``with`` blocks in it, with the statements that run after
    it in the same iteration (the rest of its block, then the rest of each block around it)."""
    for place, statement in enumerate(body):
        rest = [*body[place + 1:], *after]
        yield statement, rest
        if isinstance(statement, cst.With) and isinstance(statement.body, cst.IndentedBlock):
            yield from _with_what_follows(statement.body.body, rest)


def _dict_binding(statement: cst.BaseStatement) -> bool:
    """``M = {...}`` (or this rule's ``M = {...} if <test> else {}``), alone on its line."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return False
    small = statement.body[0]
    return (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
            and isinstance(small.value, (cst.Dict, cst.IfExp)))


def _uses(scope: FileScope, function: cst.CSTNode) -> dict[str, list[cst.Name]]:
    """Every variable name of ``function`` (nested scopes included), by name."""
    found: dict[str, list[cst.Name]] = {}
    for node in iter_nodes(scope.index, function, into_scopes=True):
        if isinstance(node, cst.Name) and scope.is_variable(node):
            found.setdefault(node.value, []).append(node)
    return found


def _plan(scope: FileScope, loop: cst.For | cst.While, function: cst.CSTNode, statement: cst.BaseStatement,
          later: list[cst.BaseStatement], sites: list[Site], uses: dict[str, list[cst.Name]]) -> Unlogged | None:
    assert isinstance(statement, cst.SimpleStatementLine)
    binding = statement.body[0]
    assert isinstance(binding, cst.Assign) and isinstance(binding.targets[0].target, cst.Name)
    guarded = _guarded_dict(scope, binding.value)
    if guarded == "":
        return None
    name = binding.targets[0].target.value
    index = scope.index
    writes: list[cst.SimpleStatementLine] = []
    conditions: list[str] = []
    consumers: list[tuple[str, str]] = []
    around: tuple[list[cst.BaseStatement], list[cst.BaseStatement]] | None = None  # (before, after) the loop
    for node in uses.get(name, ()):
        if node is binding.targets[0].target:
            continue
        if scope.function_of(node) is not scope.function_of(binding):
            return None  # another function: it may read the dict at any time
        if any(scope.within(node, s) for s in later):
            write = _write(scope, node)
            if write is not None:
                writes.append(write)
                continue
            consumer = _consumer(scope, loop, node)
        elif scope.within(node, loop):
            return None  # before the binding in an iteration: it reads the last iteration's dict
        elif _bound_alone(scope, node):
            continue  # the name bound again outside the loop (``M = dict(restored)`` before it): not this dict
        else:
            around = around or _around(scope, loop, function)
            if not any(scope.within(node, s) for s in around[1]):
                return None  # before the loop, or in a loop around it before it (the next pass reads the last dict)
            consumer = _consumer(scope, function, node)  # after the loop: the last iteration's dict
        if consumer is None:
            return None
        if consumer[0] not in conditions:
            conditions.append(consumer[0])
        if consumer[1:] not in consumers:
            consumers.append(consumer[1:])
    if not conditions:
        return None
    before = around[0] if around is not None else None  # a consumer after the loop: where its test name is bound
    for condition in conditions:
        for binder in name_binders(scope.rule, condition):
            if scope.within(binder, loop) or isinstance(scope.parent(binder), cst.NameItem):
                return None  # a logger that may appear or vanish between the reads and the consumer
            if before is not None and scope.function_of(binder) is scope.function_of(loop) and not (
                    isinstance(scope.parent(binder), cst.Param) or any(scope.within(binder, s) for s in before)):
                return None  # bound where a consumer after the loop may see another value than the loop did
    test = " or ".join(f"{condition} is not None" for condition in conditions)
    if guarded is not None and guarded != test:
        return None
    refreshed = {id(site.statement) for site in sites if site.kind == REFRESHED}
    reading = [line for line in [statement, *writes] if id(line) not in refreshed and _reads_device(scope, line)]
    done = [line for line in reading if (line is statement and guarded is not None)
            or (line is not statement and _under_test(scope, loop, line, test))]
    todo = [line for line in reading if line not in done]
    if not reading or not all(reads_only(index, value) for line in todo for value in _guarded_values(line)):
        return None
    if any(scope.rule.context.suppressed(UNLOGGED_CODE, line) for line in reading):
        return None  # suppressed there (noqa, porter: ignore): the reads stay per-step sync sites, NRN606 marks them
    return Unlogged(name, test, consumers, todo, statement, reading)


def _guarded_dict(scope: FileScope, value: cst.BaseExpression) -> str | None:
    """None for a dict literal; the test's text for ``{...} if <test> else {}`` (this rule's own
    form); "" for anything else."""
    if isinstance(value, cst.Dict):
        return None
    if isinstance(value, cst.IfExp) and isinstance(value.body, cst.Dict) and isinstance(value.orelse, cst.Dict) and not value.orelse.elements:
        return scope.code(value.test).strip()
    return ""


def _write(scope: FileScope, node: cst.Name) -> cst.SimpleStatementLine | None:
    """The statement line of ``M.update(...)`` or ``M[key] = value`` that ``node`` (``M``) starts."""
    parent = scope.parent(node)
    if isinstance(parent, cst.Attribute) and parent.attr.value == "update":
        call = scope.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent:
            expr = scope.parent(call)
            line = scope.parent(expr) if isinstance(expr, cst.Expr) else None
            if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
                return line
        return None
    if isinstance(parent, cst.Subscript) and parent.value is node and all(isinstance(e.slice, cst.Index) for e in parent.slice):
        target = scope.parent(parent)
        assign = scope.parent(target) if isinstance(target, cst.AssignTarget) else None
        line = scope.parent(assign) if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line
    return None


def _bound_alone(scope: FileScope, node: cst.Name) -> bool:
    """``node`` is the whole target of ``M = <value>``, a statement of its own."""
    target = scope.parent(node)
    assign = scope.parent(target) if isinstance(target, cst.AssignTarget) else None
    return isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(scope.parent(assign), cst.SimpleStatementLine)


def _around(scope: FileScope, loop: cst.CSTNode, function: cst.CSTNode) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement]]:
    """(before, after) ``loop``, up to its function: the statements that run once before it starts
    (before it in its block and in each block around it, none in a loop around it: their next pass
    would run between two passes of ``loop``), and those that run after it ends (the rest of its block
    and of each block around it; an ``else`` or ``finally`` beside it is not among them)."""
    before: list[cst.BaseStatement] = []
    after: list[cst.BaseStatement] = []
    child: cst.CSTNode = loop
    current = scope.parent(loop)
    while current is not None:
        if isinstance(current, (cst.For, cst.While)):
            before = []  # inside a loop around it: not once before it
        if isinstance(current, (cst.IndentedBlock, cst.Module)):
            body = list(current.body)
            place = next(i for i, s in enumerate(body) if s is child)
            before.extend(body[:place])
            after.extend(body[place + 1:])
        if current is function:
            break
        child, current = current, scope.parent(current)
    return before, after


def _consumer(scope: FileScope, stop: cst.CSTNode, node: cst.Name) -> tuple[str, str, str] | None:
    """(a name the call needs not None, the call as the marker names it, why) when ``node`` is an
    argument of a call, made as a statement, that reads nothing without that name: a function whose
    body tests its parameter first (``log_metrics(logger, ...)``, ``save(path, ...)`` that returns
    when ``path`` is None), or any call under ``if C:`` / ``if C is not None:`` / ``if C and ...:``
    below ``stop`` (the loop, or the function for a call after the loop)."""
    arg = scope.parent(node)
    call = scope.parent(arg) if isinstance(arg, cst.Arg) and arg.value is node else None
    if not isinstance(call, cst.Call) or not isinstance(scope.parent(call), cst.Expr):
        return None
    shown = scope.code(call.func).strip() + "(...)"
    found = project_function(scope.rule, call.func)
    if found is not None:
        parameter = _logger_parameter(found[1])
        passed = _passed_as(call, found[1], parameter) if parameter is not None else None
        if passed is not None:
            return passed, shown, f"which does nothing when {passed} is None"
    child: cst.CSTNode = call
    current = scope.parent(call)
    while current is not None and current is not stop:
        if isinstance(current, cst.If) and child is current.body:
            condition = _needed_name(current.test)
            if condition is not None:
                return condition, shown, f"under `if {scope.code(current.test).strip()}`"
        child, current = current, scope.parent(current)
    return None


def _under_test(scope: FileScope, loop: cst.For | cst.While, node: cst.CSTNode, test: str) -> bool:
    """``node`` is in the body of an ``if <test>:`` of the loop (this rule's guard, a second pass)."""
    child, current = node, scope.parent(node)
    while current is not None and current is not loop:
        if isinstance(current, cst.If) and child is current.body and scope.code(current.test).strip() == test:
            return True
        child, current = current, scope.parent(current)
    return False


def _needed_name(test: cst.BaseExpression) -> str | None:
    """The name a test needs truthy (or not None): ``C``, ``C is not None``, ``C and ...``."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _needed_name(test.left)
    if isinstance(test, cst.Name) and test.value not in ("True", "False", "None"):
        return test.value
    if (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.IsNot) and isinstance(test.comparisons[0].comparator, cst.Name)
            and test.comparisons[0].comparator.value == "None"):
        return test.left.value
    return None


def _logger_parameter(function: cst.FunctionDef) -> str | None:
    """The parameter the function tests first: its whole body is ``if logger is not None: ...``
    (or ``if logger:``), or it starts with ``if path is None: return`` (``not path``,
    ``path in (None, "")``, ``path is None or ...``) and reads nothing before."""
    if not isinstance(function.body, cst.IndentedBlock) or function.asynchronous is not None or function.decorators:
        return None
    body = list(function.body.body)
    if body and is_docstring(body[0]):
        body = body[1:]
    if not body or not isinstance(body[0], cst.If) or body[0].orelse is not None:
        return None
    names = {p.name.value for p in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)}
    test = body[0].test
    if len(body) == 1 and not isinstance(test, cst.BooleanOperation):
        needed = _needed_name(test)
        if needed in names:
            return needed
    exits = isinstance(body[0].body, cst.IndentedBlock) and len(body[0].body.body) == 1 and _returns_nothing(body[0].body.body[0])
    needed = _none_exit_name(test) if exits else None
    return needed if needed in names else None


def _inert(test: cst.BaseExpression) -> bool:
    """A test made of names, attributes, literals, comparisons and ``and``/``or``/``not`` only (it calls
    nothing and assigns nothing)."""
    if isinstance(test, (cst.Name, cst.BaseNumber, cst.SimpleString)):
        return True
    if isinstance(test, cst.Attribute):
        return _inert(test.value)
    if isinstance(test, cst.UnaryOperation):
        return _inert(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _inert(test.left) and _inert(test.right)
    if isinstance(test, cst.Comparison):
        return _inert(test.left) and all(_inert(c.comparator) for c in test.comparisons)
    if isinstance(test, (cst.Tuple, cst.List)):
        return all(_inert(e.value) for e in test.elements)
    return False


def _returns_nothing(statement: cst.BaseStatement) -> bool:
    """``return`` or ``return None``, alone."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Return)):
        return False
    value = statement.body[0].value
    return value is None or (isinstance(value, cst.Name) and value.value == "None")


def _none_exit_name(test: cst.BaseExpression) -> str | None:
    """The name ``P`` for which the test holds whenever ``P`` is None: ``P is None``, ``not P``,
    ``P in (None, ...)``, and an ``or`` with one of these."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        # the right side is reached only after the left ran: a left that calls or assigns has read first
        return _none_exit_name(test.left) or (_none_exit_name(test.right) if _inert(test.left) else None)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(test.expression, cst.Name):
        return test.expression.value
    if not (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and len(test.comparisons) == 1):
        return None
    operator, against = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, cst.Is) and isinstance(against, cst.Name) and against.value == "None":
        return test.left.value
    if isinstance(operator, cst.In) and isinstance(against, (cst.Tuple, cst.List)) and any(
            isinstance(e.value, cst.Name) and e.value.value == "None" for e in against.elements):
        return test.left.value
    return None


def _passed_as(call: cst.Call, function: cst.FunctionDef, parameter: str) -> str | None:
    """The name the call passes as ``parameter`` (by position or keyword); None if not a plain name."""
    if any(arg.star for arg in call.args):
        return None
    positional = [*function.params.posonly_params, *function.params.params]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == parameter:
            return arg.value.value if isinstance(arg.value, cst.Name) else None
    plain = [arg for arg in call.args if arg.keyword is None]
    for place, param in enumerate(positional):
        if param.name.value == parameter and place < len(plain):
            value = plain[place].value
            return value.value if isinstance(value, cst.Name) else None
    return None


def _guarded_values(line: cst.SimpleStatementLine) -> list[cst.BaseExpression]:
    """What a guarded statement computes: the dict (``M = {...}``), the key and value (``M[k] = v``),
    the arguments (``M.update(...)``)."""
    small = line.body[0]
    if isinstance(small, cst.Assign):
        target = small.targets[0].target
        keys = [element.slice.value for element in target.slice if isinstance(element.slice, cst.Index)
                ] if isinstance(target, cst.Subscript) else []
        return [*keys, small.value]
    assert isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
    return [arg.value for arg in small.value.args]


def _reads_device(scope: FileScope, line: cst.SimpleStatementLine) -> bool:
    return any(isinstance(n, cst.Call) and method_name(n) in _DEVICE_READS for n in iter_nodes(scope.index, line))
