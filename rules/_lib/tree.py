"""Walking a rule's file without rebuilding nodes: the engine's shared tree index."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst import MetadataDependent
from libcst.metadata import ScopeProvider

from porter.engine.fastcst.walk import TreeIndex, own_hooks

if TYPE_CHECKING:
    from porter.engine.rule import Rule


def child_index(rule: MetadataDependent) -> TreeIndex:
    """The file's tree index (built by the engine once per file and shared by every rule)."""
    tree = getattr(rule.context, "tree", None)  # type: ignore[attr-defined]
    if tree is None:  # a rule run outside the engine
        tree = rule.context.tree = TreeIndex(rule.context.module)  # type: ignore[attr-defined]
    return tree


def visit_original(index: TreeIndex | None, root: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``root.visit(visitor)`` for a read-only visitor of ``visit_<Node>`` / ``leave_<Node>`` methods,
    walked through ``index`` (no node is rebuilt). ``visit_X`` returning False skips the children,
    as in libcst. Without an index it is ``root.visit(visitor)``."""
    if index is None:
        root.visit(visitor)
        return
    hooks = own_hooks(visitor)
    visits: dict[type, object] = {}
    if root is index.root and not any(name.startswith("leave_") for name in hooks):
        # The whole file, no leave hooks: run over the shared pre-order list.
        nodes = index.preorder
        position, count = 0, len(nodes)
        while position < count:
            node = nodes[position]
            kind = type(node)
            if kind not in visits:
                visits[kind] = hooks.get(f"visit_{kind.__name__}")
            visit = visits[kind]
            if visit is not None and visit(node) is False:  # type: ignore[operator]
                position += sum(1 for _ in index.walk(node))  # a subtree is contiguous in pre-order
                continue
            position += 1
        return
    leaves: dict[type, object] = {}
    stack: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        kind = type(node)
        if kind not in visits:
            visits[kind] = hooks.get(f"visit_{kind.__name__}")
            leaves[kind] = hooks.get(f"leave_{kind.__name__}")
        if leaving:
            leaves[kind](node)  # type: ignore[operator]
            continue
        visit = visits[kind]
        descend = visit(node) if visit is not None else None  # type: ignore[operator]
        if leaves[kind] is not None:
            stack.append((node, True))
        if descend is not False:
            stack.extend((child, False) for child in reversed(index.of(node)))


def holder_through_choices(rule: Rule, node: cst.CSTNode) -> tuple[cst.CSTNode, cst.CSTNode | None] | None:
    """``(value, holder)``: the outermost conditional expression or ``and``/``or`` ``node`` is one
    choice of, and what holds it (``"nccl" if ok else "gloo"`` as an argument: that expression and
    its ``Arg``); ``(node, parent)`` when there is none. None when ``node`` is a conditional
    expression's test (a test is not the value)."""
    child: cst.CSTNode = node
    parent = rule.parent(child)
    while isinstance(parent, (cst.IfExp, cst.BooleanOperation)):
        if isinstance(parent, cst.IfExp) and parent.test is child:
            return None
        child, parent = parent, rule.parent(parent)
    return child, parent


def enclosing_function(rule: Rule, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The innermost ``def`` that holds ``node`` (None at module level)."""
    return next((a for a in rule.ancestors(node) if isinstance(a, cst.FunctionDef)), None)


def name_bindings(rule: Rule, name: cst.Name) -> list[cst.CSTNode | None] | None:
    """What each binding of ``name`` binds: the assigned value, a ``def``, or None for any other
    binding (a parameter, a loop target, an import ...). None when the scope is unknown."""
    scope = rule.get_metadata(ScopeProvider, name, None)
    if scope is None or name.value not in scope:
        return None
    values: list[cst.CSTNode | None] = []
    for assignment in scope[name.value]:
        node = getattr(assignment, "node", None)
        holder = rule.parent(node) if node is not None else None
        if isinstance(node, cst.FunctionDef):
            values.append(node)
        elif isinstance(holder, cst.AssignTarget) and isinstance(assign := rule.parent(holder), cst.Assign) \
                and len(assign.targets) == 1:
            values.append(assign.value)
        elif isinstance(holder, cst.AnnAssign) and holder.target is node:
            values.append(holder.value)
        else:
            values.append(None)
    return values
