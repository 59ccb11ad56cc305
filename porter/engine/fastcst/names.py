"""Qualified names for the rules, computed on demand, without a scope analysis of the whole file.

libcst's ``QualifiedNameProvider`` needs ``ScopeProvider`` and ``ExpressionContextProvider``: three
traversals that rebuild every node of the file, the largest cost of porting a big file. The rules
ask for the names of a few hundred nodes (calls and attributes), almost all of them spelled from an
imported name (``torch.cuda.synchronize``). This module answers those from the file's import
statements and the scopes enclosing the node, the way libcst's scope rules would:

* the dotted keys an import binds (``import a.b.c`` binds ``a.b.c``, ``a.b`` and ``a``; ``import x
  as y`` binds ``y``), looked up longest prefix first, in the nearest enclosing function, then
  the class body the node sits directly in, then the module;
* the qualified name from the import as libcst's ``ImportAssignment`` forms it (relative imports
  keep their dots);
* a star import of a torch module (``from torch.cuda.amp import *``) binds the names of that
  module's ``__all__`` (``star_exports.py``, torch's lists): ``GradScaler`` after it is
  ``torch.cuda.amp.GradScaler``. libcst resolves no star import; other packages' star imports
  (``from utils import *``) bind what is not in view and stay unresolved, and so do names this
  module hands to libcst's provider (below).

A name that is imported and also bound some other way at module level (``except ImportError:
torch = None``) gets both, as in libcst. A name imported and bound some other way in a function or
class body (a parameter, a ``for`` target, a method name) is LOCAL where that body is the nearest
scope of the enclosing ones to bind it, and goes through the imports elsewhere. An imported name that
a comprehension's ``for`` target or a lambda's parameter binds is LOCAL in that comprehension's or
lambda's own scope and goes through the imports outside it. A name bound where the scope takes more
than that to tell (``global``/``nonlocal``, a walrus, type parameters, a scope that both imports and
binds it, a use inside a comprehension, a use in the first iterable or the defaults of the
comprehension or lambda binding it), and anything this module cannot place, are answered by libcst's own provider,
computed for the file on first need (its scope analysis costs more than the parse). Nodes inside an import statement
have no names (libcst gives them no scope either).
Names that no import binds are local (``X``, source LOCAL, without libcst's ``f.<locals>.``
prefix) when bound anywhere in the file, else builtins (``builtins.X``) or unknown: libcst would
answer ``builtins.max`` where a ``max`` bound elsewhere is not visible. Rules match imported APIs,
so only the IMPORT names must be exact.
``tests/test_walk.py`` compares the IMPORT and BUILTIN names with libcst's on fixtures,
samples and a slice of the transformers source.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Mapping

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import QualifiedName, QualifiedNameSource
from libcst.metadata.base_provider import LazyValue

from porter.engine.fastcst.star_exports import STAR_EXPORTS
from porter.engine.fastcst.walk import Kinds, TreeIndex

Names = set[QualifiedName]
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_TARGET_HOLDERS = (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del)
_ALWAYS_BINDING = (
    cst.Param, cst.FunctionDef, cst.ClassDef, cst.NameItem,
    cst.MatchAs, cst.MatchStar, cst.MatchMapping, cst.TypeVar, cst.ParamSpec, cst.TypeVarTuple, cst.TypeAlias,
)
_CONTAINERS = (cst.Element, cst.StarredElement, cst.Tuple, cst.List)
_LINES = (cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.BaseCompoundStatement)
# The same tests as dict look-ups (see Kinds): these run for every Name of a file.
_IS_SCOPE, _IS_TARGET_HOLDER, _IS_ALWAYS_BINDING = Kinds(*_SCOPES), Kinds(*_TARGET_HOLDERS), Kinds(*_ALWAYS_BINDING)
_IS_CONTAINER, _IS_LINE, _IS_DEF = Kinds(*_CONTAINERS), Kinds(*_LINES), Kinds(cst.FunctionDef, cst.ClassDef)
_IS_IMPORT = Kinds(cst.Import, cst.ImportFrom)


def star_exports(node: cst.Import | cst.ImportFrom) -> frozenset[str]:
    """The names a ``from M import *`` of a torch module binds (empty for any other import)."""
    if not isinstance(node, cst.ImportFrom) or not isinstance(node.names, cst.ImportStar) or node.relative:
        return frozenset()
    return STAR_EXPORTS.get(_import_module(node), frozenset())


def _alias_keys(alias: cst.ImportAlias) -> list[str]:
    """The names an import alias binds, as libcst records them."""
    if alias.asname is not None:
        name = alias.asname.name
        return [name.value] if isinstance(name, cst.Name) else []
    full = get_full_name_for_node(alias.name) or ""
    parts = full.split(".")
    return [".".join(parts[:end]) for end in range(len(parts), 0, -1)] if full else []


def _import_module(node: cst.Import | cst.ImportFrom) -> str:
    if isinstance(node, cst.Import):
        return ""
    module = get_full_name_for_node(node.module) if node.module is not None else ""
    return "." * len(node.relative) + (module or "")


def import_names(node: cst.Import | cst.ImportFrom, full_name: str) -> Names:
    """What ``full_name`` means through this import statement (libcst's ImportAssignment rule: per
    alias, the longest prefix of the imported dotted name that ``full_name`` starts with)."""
    found: Names = set()
    if isinstance(node.names, cst.ImportStar):
        if full_name.split(".")[0] in star_exports(node):
            found.add(QualifiedName(f"{_import_module(node)}.{full_name}", QualifiedNameSource.IMPORT))
        return found
    module = _import_module(node)
    for alias in node.names:
        real = get_full_name_for_node(alias.name)
        if not real:
            continue
        parts = real.split(".")
        for end in range(len(parts), 0, -1):
            local = ".".join(parts[:end])
            target = f"{module}{local}" if module.endswith(".") else f"{module}.{local}" if module else local
            if alias.asname is not None:
                evaluated = alias.evaluated_alias
                if evaluated is not None:
                    local = evaluated
            if not full_name.startswith(local):
                continue
            rest = full_name[len(local):]
            if rest and not rest.startswith("."):
                continue
            rest = rest.lstrip(".")
            found.add(QualifiedName(f"{target}.{rest}" if rest else target, QualifiedNameSource.IMPORT))
            break
    return found


class LazyQualifiedNames(Mapping[cst.CSTNode, Names]):
    """``QualifiedNameProvider``'s mapping for one file, each node's names computed when asked."""

    def __init__(self, index: TreeIndex, fallback: Callable[[], Mapping[cst.CSTNode, Names]]) -> None:
        self._index = index
        self._make_fallback = fallback
        self._fallback: Mapping[cst.CSTNode, Names] | None = None
        self._cache: dict[cst.CSTNode, Names] = {}
        # scope node -> key -> import statements binding it there
        self._imports: dict[cst.CSTNode, dict[str, list[cst.Import | cst.ImportFrom]]] | None = None
        self._imported_bases: set[str] = set()
        self._in_imports: set[cst.CSTNode] = set()  # every node inside an import statement
        self._bound: set[str] = set()  # names bound other than by an import, anywhere in the file
        self._bound_inside: set[str] = set()  # ... of those, bound in a function, class, lambda or comprehension
        # Of those, the function or class body each is bound in; names bound where this module
        # does not follow the scope (global/nonlocal, a walrus, a lambda, a comprehension, type
        # parameters) are in ``_hard`` and answered by libcst.
        self._local_binds: dict[cst.CSTNode, set[str]] = {}
        self._hard: set[str] = set()
        # Names a comprehension's ``for`` target or a lambda's parameter binds, with those scopes:
        # only a node inside one of them needs libcst (dataclasses' ``field`` imported, and
        # ``for field in fields(self)`` in one comprehension of the file).
        self._own_binds: dict[str, list[cst.CSTNode]] = {}
        self._own_only: set[str] = set()  # ... of those, names the file binds no other way but imports
        # scope -> name -> the assignments binding it there (None: some binding is not one)
        self._local_holders: dict[cst.CSTNode, dict[str, list[cst.CSTNode] | None]] = {}
        self._import_bases_in: dict[cst.CSTNode, set[str]] = {}  # scope -> bases its imports bind
        self._chains: dict[cst.CSTNode, list[cst.CSTNode] | None] = {}  # statement line -> visible scopes

    # Mapping protocol: the keys are every node of the file.
    def __getitem__(self, node: cst.CSTNode) -> Names:
        found = self._cache.get(node)
        if found is None:
            found = self._cache[node] = self._names(node)
        return found

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._index.preorder)

    def __len__(self) -> int:
        return len(self._index.preorder)

    def __contains__(self, node: object) -> bool:
        return node is self._index.root or node in self._index.parents

    def get(self, node: cst.CSTNode, default: object = None) -> Names:  # type: ignore[override]
        found = self._cache.get(node)  # the rules ask again and again: answered without two more calls
        if found is not None:
            return found
        if node not in self:
            return default  # type: ignore[return-value]
        return self[node]

    def simply_bound(self, name: str) -> bool:
        """Whether ``name`` is bound, other than by an import, nowhere but at module level: then
        every access of it anywhere sees the module's bindings (``porter.engine.imports`` counts
        references on that)."""
        if self._imports is None:
            self._build()
        return name not in self._bound_inside and name not in self._own_binds

    def imported_below(self, name: str, owner: cst.CSTNode) -> bool:
        """Whether a function or class nested in ``owner`` imports ``name`` itself."""
        if self._imports is None:
            self._build()
        assert self._imports is not None
        parents = self._index.parents
        for scope, keys in self._imports.items():
            if scope is owner or name not in keys:
                continue
            current = parents.get(scope)
            while current is not None:
                if current is owner:
                    return True
                current = parents.get(current)
        return False

    def comes_before(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        """Whether ``first`` comes before ``second`` in the file (pre-order)."""
        return self._before(first, second)

    def binds(self, name: cst.Name) -> bool:
        """Whether this Name is (conservatively) a binding other than an import."""
        return self._binds(name, self._index.parents)

    @property
    def used_fallback(self) -> bool:
        return self._fallback is not None

    # ----------------------------------------------------------------- building
    def _build(self) -> None:
        imports: dict[cst.CSTNode, dict[str, list[cst.Import | cst.ImportFrom]]] = {}
        index = self._index
        parents = index.parents
        bound = self._bound
        binds = self._binds
        module_bound: set[str] = set()
        # The file's names and imports from the index's per-type lists (pre-order each): not a
        # pass over every node. What each adds does not depend on the other.
        for node in index.find(index.root, cst.Name):
            if binds(node, parents):  # type: ignore[arg-type]
                bound.add(node.value)  # type: ignore[attr-defined]
                if self._binds_at_module_level(node, parents):  # type: ignore[arg-type]
                    module_bound.add(node.value)  # type: ignore[attr-defined]
                else:
                    scope = self._binding_scope(node, parents)  # type: ignore[arg-type]
                    own = self._comprehension_or_lambda(node, parents) if scope is None else None  # type: ignore[arg-type]
                    if own is not None:  # seen only from inside that scope (_names asks first)
                        self._own_binds.setdefault(node.value, []).append(own)  # type: ignore[attr-defined]
                        continue
                    self._bound_inside.add(node.value)  # type: ignore[attr-defined]
                    if scope is None:
                        self._hard.add(node.value)  # type: ignore[attr-defined]
                    else:
                        self._local_binds.setdefault(scope, set()).add(node.value)  # type: ignore[attr-defined]
                        holders = self._local_holders.setdefault(scope, {})
                        holder = self._assignment_of(node, parents)  # type: ignore[arg-type]
                        known = holders.setdefault(node.value, [])  # type: ignore[attr-defined]
                        if holder is None or known is None:
                            holders[node.value] = None  # type: ignore[attr-defined]
                        else:
                            known.append(holder)
        self._own_only = set(self._own_binds) - self._bound_inside - module_bound
        for node in index.find(index.root, cst.Import, cst.ImportFrom):
            self._in_imports.update(index.walk(node))
            scope = self._scope_of_statement(node)
            keys = imports.setdefault(scope, {})
            star = isinstance(node.names, cst.ImportStar)  # type: ignore[attr-defined]
            for alias in () if star else node.names:  # type: ignore[attr-defined]
                for key in _alias_keys(alias):
                    statements = keys.setdefault(key, [])
                    if node not in statements:
                        statements.append(node)  # type: ignore[arg-type]
                    self._imported_bases.add(key.split(".")[0])
                    self._import_bases_in.setdefault(scope, set()).add(key.split(".")[0])
            for key in star_exports(node) if star else ():  # type: ignore[arg-type]
                keys.setdefault(key, []).append(node)  # type: ignore[arg-type]
                self._imported_bases.add(key)
                self._import_bases_in.setdefault(scope, set()).add(key)
        self._imports = imports

    @staticmethod
    def _binds(name: cst.Name, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> bool:
        """Whether this Name is (conservatively) a binding other than an import."""
        parent = parents.get(name)
        child: cst.CSTNode = name
        while _IS_CONTAINER[type(parent)]:  # unpacking targets: (a, b) = ..., for a, *b in ...
            child, parent = parent, parents.get(parent)  # type: ignore[arg-type,assignment]
        if _IS_TARGET_HOLDER[type(parent)]:
            return getattr(parent, "target", None) is child
        if type(parent) is cst.AsName:  # exact types: see _names
            return type(parents.get(parent)) is not cst.ImportAlias  # type: ignore[arg-type]
        if child is not name or not _IS_ALWAYS_BINDING[type(parent)]:
            return False
        return getattr(parent, "name", None) is name or getattr(parent, "rest", None) is name

    @staticmethod
    def _assignment_of(name: cst.Name, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> cst.CSTNode | None:
        """The ``=``, annotated or augmented assignment whose target a binding Name is, else None."""
        parent = parents.get(name)
        while _IS_CONTAINER[type(parent)]:
            parent = parents.get(parent)  # type: ignore[arg-type]
        if type(parent) is cst.AssignTarget:
            parent = parents.get(parent)
        return parent if type(parent) in (cst.Assign, cst.AnnAssign, cst.AugAssign) else None

    @staticmethod
    def _binds_at_module_level(name: cst.Name, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> bool:
        """A binding Name whose scope is the module (``global``/``nonlocal`` count as not)."""
        current = parents.get(name)
        if isinstance(current, cst.NameItem):
            return False
        if _IS_DEF[type(current)] and current.name is name:  # type: ignore[union-attr]
            current = parents.get(current)  # type: ignore[arg-type]  # a def binds its name in the enclosing scope
        while current is not None:
            if _IS_SCOPE[type(current)]:
                return False
            current = parents.get(current)
        return True

    @staticmethod
    def _binding_scope(name: cst.Name, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> cst.CSTNode | None:
        """The function or class whose body a (non-module-level) binding Name binds in, or None
        when the scope is not that simple to tell: ``global``/``nonlocal``, a walrus (it may bind
        outside a comprehension), type parameters, a lambda's or a comprehension's own names."""
        parent = parents.get(name)
        if isinstance(parent, (cst.NameItem, cst.TypeVar, cst.ParamSpec, cst.TypeVarTuple)):
            return None
        current: cst.CSTNode | None = parent
        if _IS_DEF[type(parent)] and parent.name is name:  # type: ignore[union-attr]
            current = parents.get(parent)  # type: ignore[arg-type]  # a def binds its name in the enclosing scope
        while current is not None:
            if type(current) is cst.NamedExpr:
                return None
            if _IS_SCOPE[type(current)]:
                return current if isinstance(current, (cst.FunctionDef, cst.ClassDef)) else None
            current = parents.get(current)
        return None

    @staticmethod
    def _comprehension_or_lambda(name: cst.Name, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> cst.CSTNode | None:
        """The comprehension whose ``for`` target, or the lambda whose parameter, ``name`` is
        (that scope's own binding), else None."""
        holder = parents.get(name)
        while _IS_CONTAINER[type(holder)]:
            holder = parents.get(holder)  # type: ignore[arg-type]
        if type(holder) not in (cst.CompFor, cst.Param):
            return None
        current = parents.get(holder)  # type: ignore[arg-type]
        while current is not None:
            if type(current) is cst.NamedExpr:
                return None
            if _IS_SCOPE[type(current)]:
                own = type(current) is cst.Lambda if type(holder) is cst.Param else type(current) not in (cst.Lambda, cst.FunctionDef, cst.ClassDef)
                return current if own else None
            current = parents.get(current)
        return None

    def _inside(self, node: cst.CSTNode, scopes: list[cst.CSTNode]) -> bool | None:
        """Whether ``node`` is in the own scope of one of ``scopes`` (a lambda's body; a
        comprehension but its first iterable, which runs in the enclosing scope): True; in
        one of them but not there: None; in none: False."""
        parents = self._index.parents
        below: cst.CSTNode | None = None
        child: cst.CSTNode = node
        current = parents.get(node)
        while current is not None:
            if any(current is scope for scope in scopes):
                if type(current) is cst.Lambda:
                    return True if child is current.body else None  # type: ignore[attr-defined]
                for_in: cst.CompFor | None = getattr(current, "for_in", None)
                return None if for_in is None or (child is for_in and below is for_in.iter) else True
            below, child, current = child, current, parents.get(current)
        return False

    def _locally_bound(self, base: str, chain: list[cst.CSTNode]) -> bool | None:
        """Whether a function or class body of ``chain`` (nearest first) binds ``base`` other than
        by an import before any scope imports it: True (the name is local there), False (no such
        binding shadows the imports), None (a scope both binds and imports it: ask libcst)."""
        for scope in chain:
            imported = base in self._import_bases_in.get(scope, ())
            if base in self._local_binds.get(scope, ()):
                return None if imported else True
            if imported:
                return False
        return False

    def _scope_of_statement(self, node: cst.CSTNode) -> cst.CSTNode:
        parents = self._index.parents
        current = parents.get(node)
        while current is not None and not isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            current = parents.get(current)
        return current if current is not None else self._index.root

    # ----------------------------------------------------------------- answering
    def _from_libcst(self, node: cst.CSTNode) -> Names:
        if self._fallback is None:
            self._fallback = self._make_fallback()
        value = self._fallback.get(node, set())
        return set(value() if isinstance(value, LazyValue) else value)

    def _names(self, node: cst.CSTNode) -> Names:
        if self._imports is None:
            self._build()
        parents = self._index.parents
        parent = parents.get(node)
        # Exact types (libcst's node classes have no subclasses; a failed isinstance against one runs ABCMeta's check).
        kind = type(parent)
        if kind is cst.Attribute and parent.attr is node or kind is cst.Arg and parent.keyword is node:  # type: ignore[union-attr]
            return set()  # not a reference to anything (libcst gives these no scope)
        # A name, or a dotted chain rooted at one, that no import binds (most names of a file:
        # ``self``, locals, parameters): local, builtin or unknown, without the walk up below.
        root = node
        attributes: list[str] = []  # the chain's attribute names, last first
        while type(root) is cst.Attribute:
            attributes.append(root.attr.value)  # type: ignore[attr-defined]
            root = root.value  # type: ignore[attr-defined]
        if type(root) is cst.Name and root.value not in self._imported_bases:  # type: ignore[attr-defined]
            if node in self._in_imports:
                return set()  # libcst gives the names inside an import statement no scope
            base = root.value  # type: ignore[attr-defined]
            if base in self._bound:
                # get_full_name_for_node's dotted name of the chain
                return {QualifiedName(".".join([base, *reversed(attributes)]), QualifiedNameSource.LOCAL)}
            if hasattr(builtins, base):
                return {QualifiedName(f"builtins.{base}", QualifiedNameSource.BUILTIN)}
            return set()
        full_name = get_full_name_for_node(node)
        if not full_name:
            return set()
        # Up to the statement line: no names inside imports; note a lambda/comprehension crossed,
        # and whether the node is in the own scope of each one crossed (libcst's: not a
        # comprehension's first iterable, not a lambda's parameters).
        crossed, inside = False, True
        child: cst.CSTNode | None = None
        below: cst.CSTNode | None = None  # the child's child on the way up
        current: cst.CSTNode | None = node
        while current is not None and not _IS_LINE[type(current)]:
            if _IS_IMPORT[type(current)]:
                return set()  # libcst gives the names inside an import statement no scope
            if current is not node and _IS_SCOPE[type(current)]:
                crossed = True
                if type(current) is cst.Lambda:
                    inside = inside and child is current.body
                else:
                    for_in: cst.CompFor | None = getattr(current, "for_in", None)
                    inside = inside and for_in is not None and not (child is for_in and below is for_in.iter)
            below, child = child, current
            current = parents.get(current)
        base = full_name.split(".")[0]
        if isinstance(node, cst.Name) and self._binds(node, parents) and (
            not isinstance(parent, _ALWAYS_BINDING) or not self._binds_at_module_level(node, parents)
        ):
            scope = self._binding_scope(node, parents)
            if scope is not None and base in self._import_bases_in.get(scope, ()) and self._assignment_of(node, parents) is None:
                # A parameter or def name where the same body imports it too: libcst gives the
                # binding all of that body's meanings (its other bindings, other than by ``=``, ask it).
                if type(parent) not in (cst.Param, cst.FunctionDef, cst.ClassDef) or getattr(parent, "name", None) is not node:
                    return self._from_libcst(node)
                assert self._imports is not None
                found: Names = {QualifiedName(full_name, QualifiedNameSource.LOCAL)}
                for statement in self._imports.get(scope, {}).get(base, ()):
                    found |= import_names(statement, full_name)
                return found
            return {QualifiedName(full_name, QualifiedNameSource.LOCAL)}  # an assignment target, a parameter ...
        if base not in self._imported_bases:
            if base in self._bound:
                return {QualifiedName(full_name, QualifiedNameSource.LOCAL)}
            if hasattr(builtins, base):
                return {QualifiedName(f"builtins.{base}", QualifiedNameSource.BUILTIN)}
            return set()
        if base in self._hard:
            return self._from_libcst(node)
        own = self._own_binds.get(base)
        if own is not None:
            inside_own = self._inside(node, own)
            if inside_own is None:
                return self._from_libcst(node)
            if inside_own:
                return {QualifiedName(full_name, QualifiedNameSource.LOCAL)}  # the comprehension's or lambda's own name
        if current is None or isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            chain = self._visible_scopes(node)  # a def's header: decorators, parameters, bases
        else:
            if current not in self._chains:
                self._chains[current] = self._visible_scopes(current)
            chain = self._chains[current]
            if chain is not None and crossed and isinstance(chain[0], cst.ClassDef):
                chain = chain[1:]  # a class body is invisible from a lambda or comprehension in it
        if chain is None:
            return self._from_libcst(node)
        if base in self._bound_inside:
            # A comprehension's first iterable runs in the enclosing (class) scope: ask libcst.
            # Inside a lambda's or comprehension's own scope (which binds no name of the file:
            # base is not hard) an access sees every binding of the nearest scope binding it, in
            # any order: it is not an access of that scope.
            shadowed = None if crossed and not inside else self._locally_bound(base, chain)
            if shadowed is None:
                mixed = None if crossed and not inside else self._mixed(node, full_name, base, chain, ordered=not crossed)
                return self._from_libcst(node) if mixed is None else mixed
            if shadowed:
                return {QualifiedName(full_name, QualifiedNameSource.LOCAL)}
        # A Name is an access: libcst drops imports of its own scope that come after it.
        access = node if isinstance(node, cst.Name) and not crossed else None
        return self._through_imports(full_name, base, chain, access)

    def _through_imports(
        self, full_name: str, base: str, chain: list[cst.CSTNode], access: cst.Name | None = None
    ) -> Names:
        """libcst's lookup: the longest prefix of ``full_name`` bound in the nearest scope; at the
        module an import and a plain assignment of the same name both count (try/except
        fallbacks), giving the IMPORT names and the LOCAL one. For an ``access`` (a Name), imports
        in its own scope (``chain[0]``) that come later in the file do not count, and when none
        comes earlier the lookup goes on outward."""
        assert self._imports is not None
        parts = full_name.split(".")
        root = self._index.root
        local = base in self._bound and base not in self._own_only
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            for scope in chain:
                statements = self._imports.get(scope, {}).get(prefix)
                if statements and access is not None and scope is chain[0]:
                    statements = [s for s in statements if self._before(s, access)]
                    if not statements and not (local and scope is root):
                        continue
                assigned = local and end == 1 and scope is root
                if statements or assigned:
                    found: Names = set()
                    for statement in statements or ():
                        found |= import_names(statement, full_name)
                    if assigned:
                        found.add(QualifiedName(full_name, QualifiedNameSource.LOCAL))
                    return found
        if hasattr(builtins, base):
            return {QualifiedName(f"builtins.{base}", QualifiedNameSource.BUILTIN)}
        return set()

    def _mixed(self, node: cst.CSTNode, full_name: str, base: str, chain: list[cst.CSTNode], ordered: bool = True) -> Names | None:
        """The names of ``node`` when a function or class body of ``chain`` both imports ``base``
        and assigns it (``try: from a import f`` / ``except ImportError: f = None`` in a function;
        ``from a import f`` then ``f = partial(f, ...)``), as libcst's scope rules give them; None
        where those rules take more than this to follow (ask libcst).

        libcst: a Name read in the body that binds it sees the bindings of statements finished
        before it (an assignment's own value does not see it), and when none is, the enclosing
        scopes'; any other node (a call, an attribute), and a Name read in a lambda or comprehension
        of the body (``ordered`` False: another scope's access), sees all of them. Imports give
        their IMPORT names, assignments the LOCAL one."""
        assert self._imports is not None
        parents = self._index.parents
        access = type(node) is cst.Name
        parent = parents.get(node)
        if access and type(parent) is cst.Attribute and parent.value is node:  # type: ignore[attr-defined]
            # The root of ``amp.autocast``: the access unless a dotted import (``import amp.x``)
            # makes a longer chain the access.
            if any(key.startswith(base + ".") for scope in chain for key in self._imports.get(scope, {})):
                return None
        if "." in full_name:
            for scope in chain:
                if any(key != base and (full_name + ".").startswith(key + ".") for key in self._imports.get(scope, {})):
                    return None  # a dotted import key: libcst's longest-prefix rules
        root = self._index.root
        for at, scope in enumerate(chain):
            if scope is root:
                return self._through_imports(full_name, base, chain[at:])
            imported = base in self._import_bases_in.get(scope, ())
            local = base in self._local_binds.get(scope, ())
            if not imported and not local:
                continue
            if not imported:
                return {QualifiedName(full_name, QualifiedNameSource.LOCAL)}
            statements: list[cst.CSTNode] = list(self._imports.get(scope, {}).get(base, ()))
            holders = self._local_holders.get(scope, {}).get(base, []) if local else []
            if access and ordered and at == 0:
                if holders is None:
                    return None  # a parameter, a loop target ...: when it counts as bound is libcst's to say
                done = {id(h): self._finished_before(h, node) for h in [*statements, *holders]}
                if None in done.values():
                    return None
                statements = [s for s in statements if done[id(s)]]
                holders = [h for h in holders if done[id(h)]]
                if not statements and not holders:
                    continue  # not bound yet here: libcst looks in the enclosing scopes
            found: Names = set()
            for statement in statements:
                found |= import_names(statement, full_name)  # type: ignore[arg-type]
            if holders is None or holders:
                found.add(QualifiedName(full_name, QualifiedNameSource.LOCAL))
            return found
        return None

    def _finished_before(self, holder: cst.CSTNode, access: cst.CSTNode) -> bool | None:
        """Whether the binding statement ``holder`` ends before ``access`` is read; None when the
        access is inside it after a walrus (libcst counts that walrus as an assignment finished)."""
        current: cst.CSTNode | None = access
        while current is not None:
            if current is holder:
                return None if any(type(n) is cst.NamedExpr for n in self._index.walk(holder)) else False
            current = self._index.parents.get(current)
        return self._before(holder, access)

    def _before(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        order = self._index.order
        return order[first] <= order[second]

    def _visible_scopes(self, node: cst.CSTNode) -> list[cst.CSTNode] | None:
        """Scopes whose imports ``node`` sees, nearest first: enclosing function bodies, the class
        body it sits directly in (a class body is invisible to code nested in it), the module."""
        parents = self._index.parents
        chain: list[cst.CSTNode] = []
        direct = True  # no function, lambda or comprehension boundary crossed yet
        came: cst.CSTNode = node
        current = parents.get(node)
        while current is not None:
            if _IS_SCOPE[type(current)]:
                if isinstance(current, cst.FunctionDef):
                    if came is current.body:  # parameters' annotations and defaults: enclosing scope
                        chain.append(current)
                        direct = False
                elif isinstance(current, cst.ClassDef):
                    if came is current.body:
                        if direct:
                            chain.append(current)
                        direct = False
                else:
                    direct = False
            came, current = current, parents.get(current)
        if came is not self._index.root:
            return None  # not in this tree
        chain.append(came)
        return chain
