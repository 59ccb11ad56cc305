"""One fast pass over a libcst tree: every node's parent and children (source order) and the
pre-order list, then the rules' ``visit_*``/``leave_*`` hooks dispatched over that index.

libcst's own traversal rebuilds every node it passes (``_visit_and_replace_children``), and
``ParentNodeProvider`` plus a batched visit are two such traversals per file: on the large files
that reach the parser they cost several times the parse itself. Here children are read straight
from each node's fields. Which fields hold children, and in which order, is read once per node
class from that class's own ``_visit_and_replace_children`` (the order in which it visits its
fields is the source order); a class whose method cannot be read falls back to
``node.children``. ``tests/test_walk.py`` checks the result against ``node.children`` and
``ParentNodeProvider`` on every fixture and sample.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence

import libcst as cst

_FIELDS: dict[type, tuple[str, ...] | None] = {}


class Kinds(dict[type, bool]):
    """``kinds[type(x)]`` is ``isinstance(x, bases)`` at the cost of a dict look-up. libcst's node
    classes are ABCs: every ``isinstance`` against one runs ``ABCMeta.__instancecheck__`` (a
    Python call), millions of times per large file in the walks below."""

    def __init__(self, *bases: type) -> None:
        super().__init__()
        self.bases = bases

    def __missing__(self, kind: type) -> bool:
        found = self[kind] = issubclass(kind, self.bases)
        return found


_IS_NODE = Kinds(cst.CSTNode)


def _identity_hash_in_c() -> None:
    """Nodes hash by identity, as before, but without a Python call per hash.

    libcst gives every node class ``CSTNode.__hash__`` (``return id(self)``, a Python method;
    equality is identity too). Every dict of nodes here (parents, children, names, positions)
    calls it on each look-up: half a million calls on a large file, about a tenth of the port.
    ``object.__hash__`` is an identity hash as well, in C: the same dicts and sets, faster.
    """
    python_hash = cst.CSTNode.__dict__.get("__hash__")
    if python_hash is None:
        return
    stack: list[type] = [cst.CSTNode]
    while stack:
        kind = stack.pop()
        if kind.__dict__.get("__hash__") is python_hash:
            kind.__hash__ = object.__hash__  # type: ignore[assignment]
        stack.extend(kind.__subclasses__())


_identity_hash_in_c()


def child_fields(kind: type) -> tuple[str, ...] | None:
    """The fields of ``kind`` that hold child nodes, in source order (None: read ``children``)."""
    if kind in _FIELDS:
        return _FIELDS[kind]
    fields: tuple[str, ...] | None
    try:
        method = kind._visit_and_replace_children  # type: ignore[attr-defined]
        tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
        calls = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id.startswith("visit_")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ]
        calls.sort(key=lambda call: (call.lineno, call.col_offset))
        names: list[str] = []
        for call in calls:
            name = call.args[1].value  # type: ignore[attr-defined]
            if name not in names:
                names.append(name)
        fields = tuple(names)
    except (OSError, TypeError, SyntaxError, AttributeError):
        fields = None
    _FIELDS[kind] = fields
    return fields


_NO_CHILDREN: tuple[cst.CSTNode, ...] = ()


class TreeIndex:
    """Parents, children and pre-order of one original tree, built in one pass; the one index of a
    file that the engine dispatches over and the rules walk (``rules/_lib/tree.py``).

    ``children[node]`` is ``node.children`` of an original node, in source order. A node outside the
    original tree (built by a rule) falls back to ``node.children``.
    """

    __slots__ = ("_buckets", "_found", "_order", "children", "parents", "preorder", "root")

    def __init__(self, root: cst.CSTNode) -> None:
        parents: dict[cst.CSTNode, cst.CSTNode] = {}
        children: dict[cst.CSTNode, list[cst.CSTNode]] = {}
        preorder: list[cst.CSTNode] = []
        fields_of = _FIELDS
        is_node = _IS_NODE
        stack = [root]
        while stack:
            node = stack.pop()
            preorder.append(node)
            kind = type(node)
            fields = fields_of[kind] if kind in fields_of else child_fields(kind)
            if fields is None:
                kids = list(node.children)
            else:
                kids = []
                for name in fields:
                    value = getattr(node, name)
                    if is_node[value.__class__]:
                        kids.append(value)
                    elif value.__class__ is tuple or value.__class__ is list:
                        kids.extend(value)
            if kids:
                children[node] = kids
                for kid in kids:
                    parents[kid] = node
                stack.extend(reversed(kids))
        self.root = root
        self.parents = parents
        self.children = children
        self.preorder = preorder
        self._buckets: dict[type, list[cst.CSTNode]] | None = None
        self._order: dict[cst.CSTNode, int] | None = None
        self._found: dict[tuple[type, ...], list[cst.CSTNode]] = {}

    @classmethod
    def derived(cls, root: cst.CSTNode, original: TreeIndex) -> TreeIndex:
        """The index of ``root``, a tree that shares subtrees with ``original``'s (the ported module:
        the edit applier keeps every node it did not enter as the same object). A shared subtree is
        not walked again: its nodes' parents and children are the original's, and its pre-order is
        a slice of the original's. Entries of original nodes the new tree dropped stay in the
        mappings (never reached from ``root``)."""
        index = cls.__new__(cls)
        order = original.order
        parents = dict(original.parents)
        children = dict(original.children)
        preorder: list[cst.CSTNode] = []
        fields_of = _FIELDS
        is_node = _IS_NODE
        shared: list[tuple[int, int]] = []
        stack = [root]
        while stack:
            node = stack.pop()
            start = order.get(node)
            if start is not None:
                end = original.end(node)
                shared.append((start, end))
                preorder += original.preorder[start:end]
                continue
            preorder.append(node)
            # The children as __init__ reads them, written out again: no function call per node.
            kind = type(node)
            fields = fields_of[kind] if kind in fields_of else child_fields(kind)
            if fields is None:
                kids = list(node.children)
            else:
                kids = []
                for name in fields:
                    value = getattr(node, name)
                    if is_node[value.__class__]:
                        kids.append(value)
                    elif value.__class__ is tuple or value.__class__ is list:
                        kids.extend(value)
            children.pop(node, None)
            if kids:
                children[node] = kids
                for kid in kids:
                    parents[kid] = node
                stack.extend(reversed(kids))
        shared.sort()
        if any(first[1] > second[0] for first, second in zip(shared, shared[1:])):
            return cls(root)  # an original node twice in the new tree: which parent it gets is the fresh walk's to say
        parents.pop(root, None)
        index.root, index.parents, index.children, index.preorder = root, parents, children, preorder
        index._buckets = index._order = None
        index._found = {}
        return index

    @property
    def order(self) -> dict[cst.CSTNode, int]:
        """Each node's position in the pre-order list (computed on first use)."""
        if self._order is None:
            self._order = {node: position for position, node in enumerate(self.preorder)}
        return self._order

    def end(self, node: cst.CSTNode) -> int:
        """The position in the pre-order list just past ``node``'s subtree: its next sibling's, or
        (the last child) its parent's end."""
        current = node
        while True:
            parent = self.parents.get(current)
            if parent is None:
                return len(self.preorder)
            order = self.order
            siblings = self.children[parent]
            at = bisect_right(siblings, order[current], key=order.__getitem__)  # siblings are in pre-order
            if at < len(siblings):
                return order[siblings[at]]
            current = parent

    def of(self, node: cst.CSTNode) -> Sequence[cst.CSTNode]:
        """The children of ``node`` (as ``node.children``, without rebuilding it)."""
        found = self.children.get(node)
        if found is not None:
            return found
        if node is self.root or node in self.parents:
            return _NO_CHILDREN  # an original leaf
        return node.children

    def walk(self, root: cst.CSTNode, skip: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
        """Every node under ``root`` (``root`` included), pre-order; nodes of a ``skip`` type
        other than ``root`` are yielded but not entered."""
        span = None if skip else self._span(root)
        if span is not None:  # a subtree is contiguous in the pre-order list
            preorder = self.preorder
            for position in range(*span):
                yield preorder[position]
            return
        stack = [root]
        while stack:
            current = stack.pop()
            yield current
            if skip and current is not root and isinstance(current, skip):
                continue
            stack.extend(reversed(self.of(current)))

    def span(self, root: cst.CSTNode) -> tuple[int, int] | None:
        """The positions of ``root``'s subtree in the pre-order list (``order``), or None (see ``_span``)."""
        return self._span(root)

    def _span(self, root: cst.CSTNode) -> tuple[int, int] | None:
        """The positions of ``root``'s subtree in the pre-order list; None for a node outside the
        indexed tree, or in a tree holding a node twice (a position does not name it there)."""
        order = self.order
        start = order.get(root)
        if start is None or len(order) != len(self.preorder):
            return None
        return start, self.end(root)

    def find(self, root: cst.CSTNode, *types: type) -> list[cst.CSTNode]:
        """Like ``m.findall(root, m.T1() | m.T2())``: the nodes of these types, pre-order."""
        if root is self.root:
            return self._of_types(types)
        span = self._span(root)
        if span is None:
            return [node for node in self.walk(root) if isinstance(node, types)]
        is_kind = _kinds(types)
        return [node for node in self.preorder[span[0] : span[1]] if is_kind[type(node)]]

    def _of_types(self, types: tuple[type, ...]) -> list[cst.CSTNode]:
        """The file's nodes of these types, pre-order, from per-type buckets built once; each
        answer is kept (a copy is handed out: the caller may change it)."""
        found = self._found.get(types)
        if found is not None:
            return list(found)
        if self._buckets is None:
            buckets: dict[type, list[cst.CSTNode]] = {}
            for node in self.preorder:
                bucket = buckets.get(type(node))
                if bucket is None:
                    buckets[type(node)] = [node]
                else:
                    bucket.append(node)
            self._buckets = buckets
        is_kind = _kinds(types)
        lists = [nodes for kind, nodes in self._buckets.items() if is_kind[kind]]
        if len(lists) == 1:
            found = lists[0]
        elif not lists:
            found = []
        else:
            order = self.order
            found = sorted((node for nodes in lists for node in nodes), key=order.__getitem__)
        self._found[types] = found
        return list(found)


_KINDS: dict[tuple[type, ...], Kinds] = {}


def _kinds(types: tuple[type, ...]) -> Kinds:
    """``isinstance(node, types)`` as a look-up by the node's class (see Kinds), one per tuple."""
    found = _KINDS.get(types)
    if found is None:
        found = _KINDS[types] = Kinds(*types)
    return found


def own_hooks(visitor: object) -> dict[str, Callable[[cst.CSTNode], object]]:
    """The ``visit_X``/``leave_X`` methods the visitor's own classes define (libcst's base classes
    define a no-op for every node type)."""
    hooks: dict[str, Callable[[cst.CSTNode], object]] = {}
    for klass in reversed(type(visitor).__mro__):
        if klass.__module__.startswith("libcst"):
            continue
        for name in vars(klass):
            if name.startswith(("visit_", "leave_")):
                hooks[name] = getattr(visitor, name)
    return hooks


def dispatch(index: TreeIndex, visitors: Iterable[object]) -> None:
    """Run batchable visitors over the indexed tree: each node's ``visit_<Type>`` hooks in visitor
    order on the way down, its ``leave_<Type>`` hooks on the way up (as libcst's batched visit,
    whose hooks cannot skip children either). Attribute hooks (``visit_Call_func``) are not
    supported: a visitor defining one raises, rather than being silently ignored."""
    hooks = [own_hooks(visitor) for visitor in visitors]
    for own in hooks:
        for name in own:
            if "_" in name.split("_", 1)[1]:  # node class names are CamelCase: visit_Call_func
                raise TypeError(f"attribute hook {name} is not supported by porter's walk")
    enter: dict[type, Sequence[Callable[[cst.CSTNode], object]]] = {}
    leave: dict[type, Sequence[Callable[[cst.CSTNode], object]]] = {}
    # Over the pre-order list (no stack of every node): a node with leave hooks waits, with the
    # position just past its subtree, until the walk gets there (innermost first, as on a stack).
    waiting: list[tuple[int, cst.CSTNode, Sequence[Callable[[cst.CSTNode], object]]]] = []
    for position, node in enumerate(index.preorder):
        while waiting and waiting[-1][0] <= position:
            _, done, leaving = waiting.pop()
            for hook in leaving:
                hook(done)
        kind = type(node)
        calls = enter.get(kind)
        if calls is None:
            calls = enter[kind] = [h[f"visit_{kind.__name__}"] for h in hooks if f"visit_{kind.__name__}" in h]
            leave[kind] = [h[f"leave_{kind.__name__}"] for h in hooks if f"leave_{kind.__name__}" in h]
        for hook in calls:
            hook(node)
        if leave[kind]:
            waiting.append((index.end(node), node, leave[kind]))
    while waiting:
        _, done, leaving = waiting.pop()
        for hook in leaving:
            hook(done)
