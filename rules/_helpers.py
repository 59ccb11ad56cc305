"""Small libcst helpers shared by several rules (no rule lives here)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import libcst as cst
import libcst.matchers as m
from libcst import MetadataDependent
from libcst.metadata import ParentNodeProvider

from porter.walk import own_hooks


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if isinstance(node, cst.SimpleString) and "b" not in node.prefix.lower() and "f" not in node.prefix.lower():
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def with_string_value(node: cst.SimpleString, value: str) -> cst.SimpleString:
    """A copy of ``node`` holding ``value``, keeping its prefix and quote style."""
    quote = node.quote
    body = value.replace("\\", "\\\\").replace(quote[0], "\\" + quote[0]) if len(quote) == 1 else value
    return node.with_changes(value=f"{node.prefix}{quote}{body}{quote}")


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    plain = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return plain[index] if index < len(plain) else None


def method_name(call: cst.Call) -> str | None:
    """``x.foo(...)`` -> ``"foo"``."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def dotted(node: cst.CSTNode) -> str | None:
    """``a.b.c`` as text for Name/Attribute chains, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def parse_expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def make_arg(name: str | None, value: cst.BaseExpression) -> cst.Arg:
    if name is None:
        return cst.Arg(value=value)
    return cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def with_args(call: cst.Call, args: list[cst.Arg]) -> cst.Call:
    """Replace a call's arguments; commas are fixed so the result prints like the original.

    Every argument but the last gets a comma; the last takes the original last argument's
    comma (a trailing comma in a multi-line call stays, a one-line call gets none).
    """
    trailing = call.args[-1].comma if call.args else cst.MaybeSentinel.DEFAULT
    fixed: list[cst.Arg] = []
    for index, arg in enumerate(args):
        if index == len(args) - 1:
            fixed.append(arg.with_changes(comma=trailing))
        elif isinstance(arg.comma, cst.Comma):
            fixed.append(arg)
        else:
            fixed.append(arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))))
    return call.with_changes(args=fixed)


def set_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Set ``name=value`` on a call: replace the value if present, else append the keyword."""
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[index] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    args.append(make_arg(name, value))
    return with_args(call, args)


def drop_keyword(call: cst.Call, name: str) -> cst.Call:
    args = [arg for arg in call.args if not (arg.keyword is not None and arg.keyword.value == name)]
    if len(args) == len(call.args):
        return call
    return with_args(call, args)


IS_CALL = m.Call()


def _multiline_separator(call: cst.Call) -> cst.Comma | None:
    """The comma (with its newline and indentation) between arguments of a multi-line call."""
    for arg in call.args[:-1]:
        if isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
            return arg.comma
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return cst.Comma(whitespace_after=call.whitespace_before_args)
    return None


def set_keyword_keep_layout(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Like ``set_keyword``, but an appended keyword in a multi-line call goes on its own line,
    indented like the other arguments (the trailing comma, if any, stays last)."""
    if keyword(call, name) is not None or not call.args:
        return set_keyword(call, name, value)
    separator = _multiline_separator(call)
    if separator is None:
        return set_keyword(call, name, value)
    args = list(call.args)
    last = args[-1]
    args[-1] = last.with_changes(comma=separator)
    args.append(make_arg(name, value).with_changes(comma=last.comma))
    return call.with_changes(args=args)


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


def add_keyword_keep_layout(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Like ``set_keyword_keep_layout``, but also right when the closing parenthesis sits on its own
    line after a last argument without a trailing comma: the whitespace before ``)`` (held by the
    last argument) moves to the new last argument instead of ending up between the two."""
    if keyword(call, name) is not None or not call.args:
        return set_keyword(call, name, value)
    separator = _multiline_separator(call)
    if separator is None:
        return set_keyword(call, name, value)
    args = list(call.args)
    last = args[-1]
    args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    args.append(make_arg(name, value).with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


# ----------------------------------------------------------------------------- fast tree walks
# ``node.children`` rebuilds the node through a visitor on every call, and ``m.findall`` runs a
# whole visitor over the subtree: walking a big file with them costs several full traversals per
# rule. The children of every original node are instead read once per file from the engine's
# ``porter.walk.TreeIndex`` (or, outside the engine, from ParentNodeProvider metadata, whose
# insertion order is source order) and shared in ``FileContext.notes``.

_CHILDREN_NOTE = "_children_index"
_NO_CHILDREN: tuple[cst.CSTNode, ...] = ()


class ChildIndex:
    """Children of the nodes of one file's original tree, in source order (as ``node.children``).

    A node outside the original tree (built by a rule) falls back to ``node.children``.
    """

    __slots__ = ("_buckets", "_order", "_preorder", "children", "parents", "root")

    def __init__(
        self,
        parents: Mapping[cst.CSTNode, cst.CSTNode],
        root: cst.CSTNode,
        children: dict[cst.CSTNode, list[cst.CSTNode]] | None = None,
        preorder: list[cst.CSTNode] | None = None,
    ) -> None:
        self.parents = parents
        self.root = root
        if children is None:
            children = {}
            for child, parent in parents.items():
                siblings = children.get(parent)
                if siblings is None:
                    children[parent] = [child]
                else:
                    siblings.append(child)
        self.children = children
        self._preorder: list[cst.CSTNode] | None = preorder
        self._buckets: dict[type, list[cst.CSTNode]] | None = None
        self._order: dict[cst.CSTNode, int] | None = None

    def of(self, node: cst.CSTNode) -> Sequence[cst.CSTNode]:
        found = self.children.get(node)
        if found is not None:
            return found
        if node is self.root or node in self.parents:
            return _NO_CHILDREN  # an original leaf
        return node.children

    def walk(self, root: cst.CSTNode, skip: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
        """Every node under ``root`` (``root`` included), pre-order; nodes of a ``skip`` type
        other than ``root`` are yielded but not entered."""
        stack = [root]
        while stack:
            current = stack.pop()
            yield current
            if skip and current is not root and isinstance(current, skip):
                continue
            stack.extend(reversed(self.of(current)))

    def find(self, root: cst.CSTNode, *types: type) -> list[cst.CSTNode]:
        """Like ``m.findall(root, m.T1() | m.T2())``: the nodes of these types, pre-order."""
        if root is self.root:
            return self._of_types(types)
        return [node for node in self.walk(root) if isinstance(node, types)]

    def _of_types(self, types: tuple[type, ...]) -> list[cst.CSTNode]:
        """The file's nodes of these types, pre-order, from per-type buckets built once."""
        if self._buckets is None:
            buckets: dict[type, list[cst.CSTNode]] = {}
            for node in self.preorder():
                kind = type(node)
                bucket = buckets.get(kind)
                if bucket is None:
                    buckets[kind] = [node]
                else:
                    bucket.append(node)
            self._buckets = buckets
        lists = [nodes for kind, nodes in self._buckets.items() if issubclass(kind, types)]
        if len(lists) == 1:
            return list(lists[0])
        if not lists:
            return []
        if self._order is None:
            self._order = {node: position for position, node in enumerate(self.preorder())}
        order = self._order
        return sorted((node for nodes in lists for node in nodes), key=order.__getitem__)

    def preorder(self) -> list[cst.CSTNode]:
        """Every node of the file, pre-order (computed once)."""
        if self._preorder is None:
            self._preorder = list(self.walk(self.root))
        return self._preorder


def child_index(rule: MetadataDependent) -> ChildIndex:
    """The file's ``ChildIndex``, built on first use and shared by every rule of the file."""
    notes = rule.context.notes  # type: ignore[attr-defined]
    index = notes.get(_CHILDREN_NOTE)
    if not isinstance(index, ChildIndex):
        tree = getattr(rule.context, "tree", None)  # type: ignore[attr-defined]
        if tree is not None:
            index = ChildIndex(tree.parents, tree.root, children=tree.children, preorder=tree.preorder)
        else:
            index = ChildIndex(rule.metadata[ParentNodeProvider], rule.context.module)  # type: ignore[attr-defined]
        notes[_CHILDREN_NOTE] = index
    return index


def visit_original(index: ChildIndex | None, root: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
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
        nodes = index.preorder()
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
