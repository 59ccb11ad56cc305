"""A per-step read of a value that only an interval branch refreshes: read it there, once.

    if i % log_interval == 0:
        eval_td = env.rollout(...)
    metrics["eval/reward"] = eval_td["next", "reward"].sum(1).mean().item()

Every step reads the same value again (``eval_td`` changes only when the branch runs), and each read
is a host sync. The read moves to the end of the branch into a name of its own, and the per-step
statement takes that name: the same value at every step, read from the device once per interval.

The rule writes the read under a copy of the branch's test right after the branch
(``if <test>: name = <value>``) and merges it into the branch when nothing else came between them.

When it applies (each condition is what makes the value the same at every step):
- the statement is one assignment right after an ``if`` with no ``else`` (or right after another
  read of the same branch that moves), whose test is an interval test (``syntax.is_interval_test``)
  made only of names, attributes, numbers and operators (no call, no string: its source is copied
  after the branch, so no other rule may rewrite it) that reads no name the branch assigns, both in
  the step loop's body at the same level, and no ``continue``/``break``/``return``/``raise`` in the
  branch (the read at its end always runs);
- its value only reads (``intervals.reads_only``: subscripts, arithmetic, ``.item()``, ``.mean()``...);
- at least one name it reads is assigned in the branch; those names are bound nowhere else in the
  function (not before the loop: the original would read that value at steps before the branch
  first runs) and appear nowhere else in the loop but as the branch's assignment targets, so
  nothing changes them in between; every other name it reads appears nowhere else in the loop and
  is bound in no loop of the function, nor is a loop's target (the same at every step and epoch);
- the target is a name bound nowhere else in the function (the statement itself moves into the
  branch), or a subscript or attribute (it then reads a new name, unused in the function).

It is a review change: a value another object shares (a buffer a later call fills in place) would
change between intervals without any name of the loop saying so.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass

import libcst as cst

from porter.engine.fastcst.walk import TreeIndex
from porter.rules._lib.hostsync.intervals import reads_only
from porter.rules._lib.hostsync.model import REFRESHED, RESIDUAL, Site
from porter.rules._lib.hostsync.scope import FileScope
from porter.rules._lib.hostsync.syntax import assigned_names, is_interval_test, iter_nodes

_BUILTINS = frozenset(dir(builtins))
_EXITS = (cst.Continue, cst.Break, cst.Return, cst.Raise)


@dataclass
class Refresh:
    """Move ``site``'s read into ``branch``: ``name = <value>`` at the branch's end, and the per-step
    statement becomes ``<target> = name`` (or moves whole when ``name`` is its own target)."""

    site: Site
    branch: cst.If
    refreshed: list[str]  # the names the branch assigns that the value reads
    name: str
    moves_whole: bool  # the target is ``name`` itself: the statement moves


def plan_refreshes(scope: FileScope, sites: list[Site]) -> list[Refresh]:
    """Find the residual syncs that read only what an interval branch right before them refreshes
    (or right after another such read of the same branch); their sites become REFRESHED."""
    plans: list[Refresh] = []
    chained: dict[int, cst.If] = {}  # a planned statement -> its branch: the next read may follow it
    for site in sites:  # in source order (SiteCollector walks the loops statement by statement)
        if site.kind != RESIDUAL or site.kept:
            continue
        plan = _plan(scope, site, chained)
        if plan is not None:
            site.kind = REFRESHED
            plans.append(plan)
            chained[id(site.statement)] = plan.branch
    return plans


def _plan(scope: FileScope, site: Site, chained: dict[int, cst.If]) -> Refresh | None:
    small, statement = site.node, site.statement
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    index = scope.index
    if not reads_only(index, small.value):
        return None
    block = scope.parent(statement)
    if not isinstance(block, cst.IndentedBlock) or not _in_loop_body(scope, block, site):
        return None
    statements = list(block.body)
    position = next(i for i, s in enumerate(statements) if s is statement)
    before = statements[position - 1] if position else None
    branch = chained.get(id(before)) if before is not None else None
    if branch is None:
        branch = before if isinstance(before, cst.If) else None
    if branch is None or branch.orelse is not None or not is_interval_test(index, branch.test) or not _plain_test(index, branch.test):
        return None
    loop_body = site.loop.node.body
    function: cst.CSTNode = site.loop.function if site.loop.function is not None else scope.module
    # builtins the code calls (float, abs) are the same at every step, unless the file rebinds one
    pure = _BUILTINS - assigned_names(index, scope.module) - assigned_names(index, function)
    in_branch = assigned_names(index, branch.body)
    if _names_read(scope, branch.test, pure) & in_branch:
        return None
    if any(isinstance(n, _EXITS) for n in iter_nodes(index, branch.body)):
        return None  # a read appended to the branch would not run where the branch leaves early
    read = _names_read(scope, small.value, pure)
    refreshed = sorted({name for name in read if name in in_branch})
    if not refreshed or assigned_names(index, small.value):
        return None
    bindings = _bindings(scope, function)
    for name in read:
        for node in _references(scope, loop_body, name):
            if scope.within(node, small.value):
                continue
            if name in in_branch and scope.within(node, branch.body) and isinstance(scope.parent(node), cst.AssignTarget):
                continue
            return None  # used elsewhere in the loop: it may change between intervals
        where = bindings.get(name, [])
        if name in in_branch:
            # bound only by the branch: before its first run the original had no value either
            if not where or any(not scope.within(binder, branch.body) for binder in where):
                return None
        elif any(_in_a_loop(scope, binder, function) for binder in where):
            return None  # rebound from one step (or epoch) to the next
    target = small.targets[0].target
    if isinstance(target, cst.Name):
        if any(binder is not small for binder in bindings.get(target.value, [])):
            return None  # bound elsewhere too (`x /= scale` after it, a value before the loop)
        return Refresh(site, branch, refreshed, target.value, True)
    if not isinstance(target, (cst.Subscript, cst.Attribute)):
        return None
    used = {n.value for n in iter_nodes(index, function, into_scopes=True) if isinstance(n, cst.Name)}
    return Refresh(site, branch, refreshed, _fresh_name(target, refreshed, used), False)


# What an interval test may be made of: names, attributes, numbers and operators (no call, no string:
# another rule may rewrite those, and the rule copies the test's source text after the branch).
_PLAIN = (cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.BinaryOperation, cst.UnaryOperation, cst.Comparison,
          cst.ComparisonTarget, cst.BooleanOperation, cst.BaseBinaryOp, cst.BaseUnaryOp, cst.BaseCompOp,
          cst.BaseBooleanOp, cst.LeftParen, cst.RightParen, cst.BaseParenthesizableWhitespace)


def _plain_test(index: TreeIndex, test: cst.BaseExpression) -> bool:
    for node in iter_nodes(index, test):
        if not isinstance(node, _PLAIN):
            return False
        if isinstance(node, cst.Name) and node.value == "torch":
            return False
    return True


def _bindings(scope: FileScope, function: cst.CSTNode) -> dict[str, list[cst.CSTNode]]:
    """Every node of ``function`` (not of functions nested in it) that binds each name: an assignment
    of any kind, a loop or comprehension target, ``with ... as``, ``del``, an import, a nested def or
    class, a parameter of ``function``, a ``global``/``nonlocal`` declaration."""
    found: dict[str, list[cst.CSTNode]] = {}

    def add(names: set[str], binder: cst.CSTNode) -> None:
        for name in names:
            found.setdefault(name, []).append(binder)

    index = scope.index
    if isinstance(function, cst.FunctionDef):
        for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
            add({param.name.value}, param)
        for star in (function.params.star_arg, function.params.star_kwarg):
            if isinstance(star, cst.Param):
                add({star.name.value}, star)
    body = function.body if isinstance(function, cst.FunctionDef) else function
    for node in iter_nodes(index, body):
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not function:
            add({node.name.value}, node)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            add({item.name.value for item in node.names}, node)
        elif isinstance(node, cst.Del):
            add({n.value for n in iter_nodes(index, node.target) if isinstance(n, cst.Name)}, node)
        elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
            add({(alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name)
                  else (alias.evaluated_name.split(".")[0])) for alias in node.names}, node)
        elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.AsName)):
            if isinstance(node, cst.AsName) and isinstance(scope.parent(node), cst.ImportAlias):
                continue  # counted with its import
            add(assigned_names(index, node) if not isinstance(node, (cst.For, cst.CompFor)) else
                {n.value for n in iter_nodes(index, node.target) if isinstance(n, cst.Name)}, node)
    return found


def _in_a_loop(scope: FileScope, node: cst.CSTNode, function: cst.CSTNode) -> bool:
    """``node`` is a loop or comprehension target, or inside a loop of ``function``."""
    if isinstance(node, (cst.For, cst.CompFor, cst.While)):
        return True
    current = scope.parent(node)
    while current is not None and current is not function:
        if isinstance(current, (cst.For, cst.While, cst.CompFor)):
            return True
        current = scope.parent(current)
    return False


def _in_loop_body(scope: FileScope, block: cst.IndentedBlock, site: Site) -> bool:
    """The block is the loop's body, or a ``with`` body in it (no branch or inner loop between)."""
    current: cst.CSTNode | None = block
    while current is not site.loop.node.body:
        owner = scope.parent(current) if current is not None else None
        if not isinstance(owner, cst.With):
            return False
        current = scope.parent(owner)
        if not isinstance(current, cst.IndentedBlock):
            return False
    return True


def _names_read(scope: FileScope, node: cst.CSTNode, pure: frozenset[str]) -> set[str]:
    """The variables ``node`` reads, but ``pure`` builtins."""
    return {n.value for n in iter_nodes(scope.index, node) if isinstance(n, cst.Name) and scope.is_variable(n) and n.value not in pure}


def _references(scope: FileScope, node: cst.CSTNode, name: str) -> list[cst.Name]:
    return [
        n for n in iter_nodes(scope.index, node, into_scopes=True)
        if isinstance(n, cst.Name) and n.value == name and scope.is_variable(n)
    ]


def _fresh_name(target: cst.BaseAssignTargetExpression, refreshed: list[str], used: set[str]) -> str:
    """``metrics["eval/reward"]`` -> ``eval_reward``; ``self.score`` -> ``score``; else ``<name>_value``."""
    base = ""
    if isinstance(target, cst.Subscript) and len(target.slice) == 1:
        key = target.slice[0].slice
        if isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString):
            base = re.sub(r"\W+", "_", str(key.value.evaluated_value)).strip("_").lower()
    elif isinstance(target, cst.Attribute):
        base = target.attr.value
    if not base.isidentifier() or base[0].isdigit():
        base = f"{refreshed[0]}_value"
    if base in used or base in _BUILTINS:
        base = f"{base}_value"
    name, n = base, 1
    while name in used or name in _BUILTINS:
        n += 1
        name = f"{base}_{n}"
    return name
