"""Removing imports a port made unused, decided from the original module.

After the port an import binding is unused exactly when each of its accesses in the original
module lies inside a node an edit replaced or removed — so no second parse or scope pass over the
ported module is needed. The accesses come from the file's tree index: when the bound name is
bound (other than by an import) nowhere but at module level and the import is a module-level
statement, every access of the name anywhere reads the module's bindings, so its accesses are the
``Name`` nodes spelling it that are not bindings (a ``del`` counts as an access, as in libcst),
attribute names, keywords or parts of an import, plus the strings mentioning it where a type hint
may be (libcst reads string annotations). That over-counts (an access that reaches a local import
of the same name elsewhere counts too), which only keeps an import. Anything else — a name bound
in a function or class, an import in a class body — asks libcst's scope analysis, which costs
more than the parse of the file. An import in a function body binds the name there alone: its
accesses are those Names inside the function that come after the import or sit in a scope nested
in it, as long as no function nested in it imports the name again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import libcst as cst
from libcst.metadata import ParentNodeProvider, QualifiedNameProvider, ScopeProvider

from porter.engine.changes import ImportSpec
from porter.engine.fastcst.names import LazyQualifiedNames
from porter.engine.fastcst.walk import TreeIndex
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
    """(module, obj, asname) of every import at the module level of ``module``, including those
    under a module-level ``if``/``try``/``with`` (``if is_torch_available(): import torch``: the
    file imports torch on its own terms, and an edit using ``torch`` runs where it is bound). An
    ``import a.b`` binds ``a`` as ``import a`` does, so it counts as ``(a, None, None)`` too."""
    found: set[tuple[str, str | None, str | None]] = set()
    for small in _module_level_smalls(module.body):
        if isinstance(small, cst.Import):
            for alias in small.names:
                name, asname = dotted_name(alias.name), _asname(alias)
                found.add((name, None, asname))
                if asname is None and "." in name:
                    found.add((name.split(".")[0], None, None))
        elif isinstance(small, cst.ImportFrom) and not small.relative and not isinstance(small.names, cst.ImportStar):
            module_name = dotted_name(small.module)
            found.update((module_name, dotted_name(alias.name), _asname(alias)) for alias in small.names)
    return found


def _type_checking(test: cst.BaseExpression) -> bool:
    name = dotted_name(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
    return name is not None and name.split(".")[-1] == "TYPE_CHECKING"


def _module_level_smalls(body: Sequence[cst.BaseStatement]) -> Iterator[cst.BaseSmallStatement]:
    """The small statements run at module level: into ``if``/``try``/``with`` blocks, not into
    functions or classes."""
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body
        elif isinstance(statement, (cst.If, cst.Try, cst.TryStar, cst.With)):
            if isinstance(statement, cst.If) and _type_checking(statement.test):
                continue  # bound for the type checker only, not when the file runs
            blocks: list[cst.BaseSuite] = [statement.body]
            if isinstance(statement, cst.If) and statement.orelse is not None:
                orelse = statement.orelse
                blocks.append(orelse.body if isinstance(orelse, cst.Else) else cst.IndentedBlock(body=[orelse]))
            if isinstance(statement, (cst.Try, cst.TryStar)):
                blocks.extend(handler.body for handler in statement.handlers)
                blocks.extend(part.body for part in (statement.orelse, statement.finalbody) if part is not None)
            for block in blocks:
                if isinstance(block, cst.IndentedBlock):
                    yield from _module_level_smalls(block.body)
                elif isinstance(block, cst.SimpleStatementSuite):
                    yield from block.body


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
    tree: TreeIndex | None = None,
) -> list[Edit]:
    """Edits that drop each candidate import whose every use the port replaced."""
    if not candidates:
        return []
    parents: Mapping[cst.CSTNode, cst.CSTNode] = metadata[ParentNodeProvider]  # type: ignore[assignment]
    names = metadata[QualifiedNameProvider] if tree is not None else None
    counted = _ReferenceCount(tree, names) if isinstance(names, LazyQualifiedNames) and tree is not None else None
    scopes: Mapping[cst.CSTNode, Any] | None = None
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
        bound = bound_name(spec)
        for node in imports:
            if isinstance(node.names, cst.ImportStar):
                continue
            if not any(_matches(node, alias, spec) for alias in node.names):
                continue
            references = counted.references(bound, node) if counted is not None else None
            if references is None:  # not simple enough to count: libcst's scope analysis
                if scopes is None:
                    scopes = metadata[ScopeProvider]
                scope: Any = scopes.get(node)
                if scope is None:
                    continue
                assignments = [a for a in scope.assignments[bound] if getattr(a, "node", None) is node]
                references = [access.node for a in assignments for access in a.references]
            if any(not rewritten(reference) for reference in references):
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


_STRINGS = (cst.SimpleString, cst.ConcatenatedString)
_HINT_CALLS = frozenset({"cast", "TypeVar", "NewType"})  # calls whose string arguments libcst reads as types
_IMPORTS = (cst.Import, cst.ImportFrom)
_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_LINES = (cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.BaseCompoundStatement)


class _ReferenceCount:
    """The accesses of a module-level import binding, from the tree index (see the module doc)."""

    def __init__(self, tree: TreeIndex, names: LazyQualifiedNames) -> None:
        self.tree, self.names = tree, names
        self._by_name: dict[str, list[cst.CSTNode]] | None = None
        self._strings: list[cst.CSTNode] | None = None

    def references(self, bound: str, statement: cst.Import | cst.ImportFrom) -> list[cst.CSTNode] | None:
        """The nodes that may access ``bound`` as bound by ``statement``, or None: ask libcst."""
        parents = self.tree.parents
        line = parents.get(statement)
        if "." in bound or not isinstance(line, cst.SimpleStatementLine):
            return None
        owner: cst.CSTNode | None = None  # the function whose body imports it (None: the module)
        current = parents.get(line)
        while current is not None:  # maybe inside if/try blocks
            if isinstance(current, cst.ClassDef):
                return None
            if isinstance(current, cst.FunctionDef):
                owner = current
                break
            current = parents.get(current)
        if not self.names.simply_bound(bound):
            return None
        if owner is not None and self.names.imported_below(bound, owner):
            return None  # a function nested in it imports the name again
        if self._by_name is None:
            self._index()
        assert self._by_name is not None and self._strings is not None
        names: Iterable[cst.CSTNode] = self._by_name.get(bound, ())
        strings: Iterable[cst.CSTNode] = self._strings
        if owner is not None:
            names = [name for name in names if self._reads_after(statement, name, owner)]
            strings = self._inside(strings, owner)
        found = [name for name in names if self._accesses(name)]  # type: ignore[arg-type]
        word = re.compile(rf"(?<![\w.]){re.escape(bound)}\b")
        found += [string for string in strings if word.search(_text(string)) and self._in_hint(string)]
        return found

    def _inside(self, nodes: Iterable[cst.CSTNode], owner: cst.CSTNode) -> list[cst.CSTNode]:
        """Those of ``nodes`` inside ``owner``: a position in its pre-order span (one look-up
        each, not a walk up from every string of the file for every import in a function)."""
        span = self.tree.span(owner)
        if span is None:
            return [node for node in nodes if self._below(node, owner) is not None]
        order, (start, end) = self.tree.order, span
        return [node for node in nodes if start <= order.get(node, -1) < end]

    def _below(self, node: cst.CSTNode, owner: cst.CSTNode) -> bool | None:
        """None when ``node`` is not inside ``owner``; else whether a function, lambda, class or
        comprehension nested in ``owner`` holds it."""
        nested = False
        current = self.tree.parents.get(node)
        while current is not None:
            if current is owner:
                return nested
            nested = nested or isinstance(current, _NESTED_SCOPES)
            current = self.tree.parents.get(current)
        return None

    def _reads_after(self, statement: cst.CSTNode, name: cst.CSTNode, owner: cst.CSTNode) -> bool:
        """Whether ``name`` may read ``owner``'s import ``statement``: it is inside ``owner`` and
        comes after the import, or sits in a scope nested in it (which sees the import whenever
        it runs). Over-counting only keeps an import."""
        nested = self._below(name, owner)
        return nested is not None and (nested or self.names.comes_before(statement, name))

    def _index(self) -> None:
        by_name: dict[str, list[cst.CSTNode]] = {}
        strings: list[cst.CSTNode] = []
        for node in self.tree.preorder:
            if type(node) is cst.Name:
                by_name.setdefault(node.value, []).append(node)  # type: ignore[attr-defined]
            elif isinstance(node, _STRINGS) and not isinstance(self.tree.parents.get(node), cst.ConcatenatedString):
                strings.append(node)
        self._by_name, self._strings = by_name, strings

    def _accesses(self, name: cst.Name) -> bool:
        parents = self.tree.parents
        parent = parents.get(name)
        if isinstance(parent, cst.Attribute) and parent.attr is name or isinstance(parent, cst.Arg) and parent.keyword is name:
            return False
        if self.names.binds(name) and not isinstance(parent, (cst.Del, cst.AugAssign)):
            return False
        current: cst.CSTNode | None = parent
        while current is not None and not isinstance(current, _LINES):
            if isinstance(current, _IMPORTS):
                return False
            current = parents.get(current)
        return True

    def _in_hint(self, string: cst.CSTNode) -> bool:
        """Whether libcst may read ``string`` as a type (over-approximated): inside an annotation,
        or where the innermost call or subscript around it is a ``cast``/``TypeVar``/``NewType``
        call or a subscript of a plain name (libcst: of a ``typing`` name)."""
        current = self.tree.parents.get(string)
        innermost: bool | None = None
        while current is not None and not isinstance(current, _LINES):
            if isinstance(current, cst.Annotation):
                return True
            if innermost is None and isinstance(current, cst.Call):
                func = current.func
                last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
                innermost = last in _HINT_CALLS
            elif innermost is None and isinstance(current, cst.Subscript):
                innermost = isinstance(current.value, cst.Name)
            current = self.tree.parents.get(current)
        return bool(innermost)


def _text(string: cst.CSTNode) -> str:
    if isinstance(string, cst.SimpleString):
        return string.value
    if isinstance(string, cst.ConcatenatedString):
        return _text(string.left) + _text(string.right)
    return ""  # an f-string part: libcst reads no type from it


def bound_name(spec: ImportSpec) -> str:
    return spec.asname or spec.obj or spec.module.split(".")[0]


class _NamesRead(cst.CSTVisitor):
    """The names a module still reads, over-counted (a local of the same name counts too).
    ``skip``: a node of the original tree none of whose names is wanted (its subtree cannot add one)."""

    def __init__(self, wanted: set[str], skip: Callable[[cst.CSTNode], bool] | None = None) -> None:
        self.wanted, self.found = wanted, set[str]()
        self.skip = skip

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.skip is not None and self.skip(node):
            return False
        return super().on_visit(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.wanted:
            self.found.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `x.GradScaler` does not read the name GradScaler
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # nor does a keyword spelled like it
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False


def still_read(module: cst.Module, specs: Iterable[ImportSpec], tree: TreeIndex | None = None) -> set[str]:
    """The bound names of ``specs`` the ported module still reads. An import is dropped when the
    edits replaced every access of its name, but an edit's output may spell the name again
    (``GradScaler()`` -> ``GradScaler("neuron")``): this check of the result keeps such imports.

    ``tree``: the original's index. The port keeps every node it did not rebuild (the same objects),
    so a kept node whose subtree held none of the names in the original is not entered: the same
    answer as a walk of the whole module, at the cost of the rebuilt part and the names' paths."""
    wanted = {bound_name(spec) for spec in specs}
    if not wanted:
        return set()
    skip = None
    if tree is not None:
        parents = tree.parents
        holding: set[int] = set()  # the original nodes with a wanted name in their subtree
        for name in tree.find(tree.root, cst.Name):
            current: cst.CSTNode | None = name
            if name.value not in wanted:  # type: ignore[attr-defined]
                continue
            while current is not None and id(current) not in holding:
                holding.add(id(current))
                current = parents.get(current)

        def skip(node: cst.CSTNode) -> bool:  # an original node (the root is rebuilt whenever there is an edit)
            return node in parents and id(node) not in holding

    visitor = _NamesRead(wanted, skip)
    module.visit(visitor)
    return visitor.found


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
