"""What the module's own top-level imports bind (one lookup of each, shared by every rule)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from porter.engine.imported import imported_module
from porter.rules._lib.nodes import dotted
from porter.rules._lib.tree import child_index

if TYPE_CHECKING:
    from porter.engine.rule import Rule


def import_binding(module: cst.Module, name: str) -> tuple[str, str | None, str | None] | None:
    """The top-level import that binds ``name``, as (module, obj, asname) for an ``ImportSpec``:
    ``import bitsandbytes as bnb`` -> ("bitsandbytes", None, "bnb"); ``from a.b import C`` ->
    ("a.b", "C", None). None when no plain top-level import binds it."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = dotted(alias.name) or ""
                    bound = alias.evaluated_alias or full.split(".")[0]
                    if bound == name:
                        return full, None, alias.evaluated_alias
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                if small.relative or small.module is None:
                    continue
                source = dotted(small.module) or ""
                for alias in small.names:
                    obj = dotted(alias.name) or ""
                    if (alias.evaluated_alias or obj) == name:
                        return source, obj, alias.evaluated_alias
    return None


def torch_alias(module: cst.Module) -> str | None:
    """The name the file gives the ``torch`` module at top level (``torch``, ``th``), or None."""
    found: str | None = None
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                if dotted(alias.name) == "torch":
                    name = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else "torch"
                    if name == "torch":
                        return name
                    found = found or name
                elif alias.asname is None and (dotted(alias.name) or "").startswith("torch."):
                    found = found or "torch"  # import torch.nn binds the name torch
    return found


def top_level(module: cst.Module, name: str) -> cst.FunctionDef | cst.ClassDef | None:
    """The one top-level ``def`` or ``class`` of ``module`` named ``name`` (None: none, or several)."""
    found = [s for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == name]
    return found[0] if len(found) == 1 else None


def project_function(rule: Rule, func: cst.BaseExpression) -> tuple[cst.Module | None, cst.FunctionDef] | None:
    """The one top-level ``def`` a callee names: (None, it) in this file (a name no import binds), or
    (the module's tree, it) in a project module the runner listed for the file (``from utils import
    log_metrics``, ``import helpers; helpers.f``, a statement of the module or of a function's body;
    ``porter.engine.imported``). None otherwise (an import under ``if``/``try``, a file with a star
    import that may bind the name too), and
    where the name may hold something else: a callee libcst resolves to several names (imports in
    branches), or a plain name the file binds anywhere but by that ``def`` or that import (a
    parameter, an assignment, a second ``def``, a ``global``)."""
    module = rule.context.module
    if isinstance(func, cst.Name):
        binders = name_binders(rule, func.value)
        if len(binders) != 1:
            return None
        if not any(isinstance(outer, (cst.Import, cst.ImportFrom)) for outer in rule.ancestors(binders[0])):
            local = top_level(module, func.value)
            return (None, local) if isinstance(local, cst.FunctionDef) and binders == [local.name] else None
        # its one import, a statement of the module or of a function body (``from utils import
        # make_models`` in main()), not under an if/try; and no star import may bind the name too
        line = next((outer for outer in rule.ancestors(binders[0]) if isinstance(outer, cst.SimpleStatementLine)), None)
        block = rule.parent(line) if line is not None else None
        if not (isinstance(block, cst.Module) or (isinstance(block, cst.IndentedBlock) and isinstance(rule.parent(block), cst.FunctionDef))):
            return None
        index = child_index(rule)
        if index.find(index.root, cst.ImportStar):
            return None
    if not rule.options.imports:
        return None
    qualified = rule.qualified(func)
    if len(qualified) != 1:
        return None
    owner, _, name = next(iter(qualified)).rpartition(".")
    if not owner or owner.startswith("torch"):
        return None
    tree = imported_module(rule.options, owner, defining=name)
    defined = top_level(tree, name) if tree is not None else None
    return (tree, defined) if tree is not None and isinstance(defined, cst.FunctionDef) else None


def name_binders(rule: Rule, name: str) -> list[cst.CSTNode]:
    """The ``Name`` nodes of the file, in any scope, that bind ``name`` (as a target of any kind of
    assignment, a parameter, a ``def``/``class`` name, an import's name, a ``match`` capture,
    ``global``/``nonlocal``, ``del``)."""
    index = child_index(rule)
    found: list[cst.CSTNode] = []
    for node in index.find(index.root, cst.Name):
        if node.value != name:  # type: ignore[attr-defined]
            continue
        holder = index.parents.get(node)
        while isinstance(holder, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):  # `a, b = ...`
            holder = index.parents.get(holder)
        if holder is not None and _binds(rule, holder, node):
            found.append(node)
    return found


def _binds(rule: Rule, holder: cst.CSTNode, node: cst.CSTNode) -> bool:
    """``node`` (a ``Name`` under ``holder``, through tuples) is what ``holder`` binds, not what it reads."""
    if isinstance(holder, (cst.FunctionDef, cst.ClassDef, cst.Param)):
        return holder.name is node  # not a decorator, default or annotation
    if isinstance(holder, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
        return holder.target is node
    if isinstance(holder, (cst.For, cst.CompFor)):
        return node is holder.target or any(outer is holder.target for outer in rule.ancestors(node))  # not the iterable
    if isinstance(holder, cst.ImportAlias):
        return holder.asname is None  # `import m.name as other`: the alias binds
    if isinstance(holder, (cst.MatchAs, cst.MatchStar)):  # `case {"p": path}:`, `case [first, *rest]:`
        return holder.name is node
    if isinstance(holder, cst.MatchMapping):  # `case {"a": 1, **rest}:`
        return holder.rest is node
    return isinstance(holder, (cst.AssignTarget, cst.AsName, cst.NameItem, cst.Del))  # NameItem: global/nonlocal
