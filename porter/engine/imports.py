"""Removing imports a port made unused, decided from the metadata of the original module.

The scope analysis of the original module knows every access of every import binding. After the
port a binding is unused exactly when each of its accesses lies inside a node an edit replaced
or removed — so no second parse or scope pass over the ported module is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from porter.engine.changes import ImportSpec
from porter.engine.rule import Edit

REMOVAL_ORDER = (10_000, "~imports")


class ImportCollector(cst.BatchableCSTVisitor):
    """Collects import statements during the rules' own traversal (no extra walk)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.Import | cst.ImportFrom] = []

    def visit_Import(self, node: cst.Import) -> None:
        self.found.append(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.found.append(node)


def dotted_name(node: cst.BaseExpression | None) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted_name(node.value)}.{node.attr.value}"
    return ""


def _asname(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None


def top_level_imports(module: cst.Module) -> set[tuple[str, str | None, str | None]]:
    """(module, obj, asname) of every import at the top of ``module``."""
    found: set[tuple[str, str | None, str | None]] = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                found.update((dotted_name(alias.name), None, _asname(alias)) for alias in small.names)
            elif isinstance(small, cst.ImportFrom) and not small.relative and not isinstance(small.names, cst.ImportStar):
                module_name = dotted_name(small.module)
                found.update((module_name, dotted_name(alias.name), _asname(alias)) for alias in small.names)
    return found


def _matches(node: cst.Import | cst.ImportFrom, alias: cst.ImportAlias, spec: ImportSpec) -> bool:
    if _asname(alias) != spec.asname:
        return False
    if isinstance(node, cst.Import):
        return spec.obj is None and dotted_name(alias.name) == spec.module
    return (
        spec.obj is not None
        and not node.relative
        and dotted_name(node.module) == spec.module
        and dotted_name(alias.name) == spec.obj
    )


def unused_import_edits(
    metadata: Mapping[type, Mapping[cst.CSTNode, object]],
    imports: Iterable[cst.Import | cst.ImportFrom],
    candidates: Sequence[tuple[str, ImportSpec]],
    edits: Sequence[Edit],
) -> list[Edit]:
    """Edits that drop each candidate import whose every use the port replaced."""
    if not candidates:
        return []
    scopes: Mapping[cst.CSTNode, Any] = metadata[ScopeProvider]
    parents: Mapping[cst.CSTNode, cst.CSTNode] = metadata[ParentNodeProvider]  # type: ignore[assignment]
    replaced = {id(edit.target) for edit in edits if edit.transform is not None or edit.remove}

    def rewritten(node: cst.CSTNode) -> bool:
        current: cst.CSTNode | None = node
        while current is not None:
            if id(current) in replaced:
                return True
            current = parents.get(current)
        return False

    drops: dict[int, tuple[cst.SimpleStatementLine, str, list[ImportSpec]]] = {}
    for code, spec in candidates:
        bound = spec.asname or spec.obj or spec.module.split(".")[0]
        for node in imports:
            if isinstance(node.names, cst.ImportStar):
                continue
            if not any(_matches(node, alias, spec) for alias in node.names):
                continue
            scope = scopes.get(node)
            if scope is None:
                continue
            assignments = [a for a in scope.assignments[bound] if getattr(a, "node", None) is node]
            if any(not rewritten(access.node) for a in assignments for access in a.references):
                continue
            line = parents.get(node)
            if isinstance(line, cst.SimpleStatementLine):
                entry = drops.setdefault(id(line), (line, code, []))
                if spec not in entry[2]:
                    entry[2].append(spec)
    return [
        Edit(target=line, code=code, order=REMOVAL_ORDER, transform=_dropper(specs))
        for line, code, specs in drops.values()
    ]


def _dropper(specs: Sequence[ImportSpec]):  # type: ignore[no-untyped-def]
    def transform(updated: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:
        assert isinstance(updated, cst.SimpleStatementLine)
        body: list[cst.BaseSmallStatement] = []
        for small in updated.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                kept = [a for a in small.names if not any(_matches(small, a, spec) for spec in specs)]
                if not kept:
                    continue
                if len(kept) != len(small.names):
                    last = kept[-1]
                    if not (isinstance(small, cst.ImportFrom) and small.rpar is not None):
                        kept[-1] = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                    small = small.with_changes(names=kept)
            body.append(small)
        if not body:
            return cst.RemoveFromParent()
        body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(body=body)

    return transform
