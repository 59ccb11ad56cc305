"""``setup.py`` install requirements: the string lists handed to ``setup(...)``.

setup.py is Python, so the Python engine owns the file; this port runs only when
``port_file("setup.py", ...)`` is called explicitly. It finds the lists given to
``install_requires=``, ``setup_requires=`` and the values of ``extras_require=`` in a call to
``setup``/``setuptools.setup`` — written inline or as a module-level name assigned a list — and
ports their plain string literals like any requirement (``deps.port_items``). Requirements built
at run time (read from a file, concatenated, f-strings) are not seen.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from porter.filetypes import deps
from porter.filetypes._doc import Doc
from porter.filetypes._tree import Node, ParseError

_KEYWORDS = frozenset({"install_requires", "setup_requires"})


def check(text: str) -> None:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise ParseError(f"setup.py does not parse: {error.message}") from None


def port_setup_py(doc: Doc) -> None:
    try:
        module = cst.parse_module(doc.source)
    except cst.ParserSyntaxError as error:
        raise ParseError(f"syntax error at line {error.raw_line}: {error.message}") from None
    wrapper = MetadataWrapper(module)
    finder = _Finder()
    wrapper.visit(finder)
    positions = wrapper.resolve(PositionProvider)
    items: list[deps.Item] = []
    quote = '"'
    for string in finder.strings():
        node = _as_node(string, positions)
        if node is None:
            continue
        item = deps.string_item(doc, node)
        if item is not None:
            items.append(item)
            quote = item.quote if item.req.key == "torch" else quote
    deps.port_items(doc, items, deps.quoted_layout(quote))


def _as_node(string: cst.SimpleString, positions: object) -> Node | None:
    if string.prefix or string.quote not in ('"', "'"):
        return None
    where = positions[string]  # type: ignore[index]
    start, end = where.start, where.end
    return Node("scalar", (start.line - 1, start.column), (end.line - 1, end.column), value=string.raw_value, style=string.quote)


class _Finder(cst.CSTVisitor):
    """Collects the requirement lists of ``setup(...)`` calls and module-level list assignments."""

    def __init__(self) -> None:
        super().__init__()
        self.lists: list[cst.BaseExpression] = []
        self.names: set[str] = set()
        self.assigned: dict[str, cst.BaseExpression] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.assigned[target.target.value] = node.value

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name != "setup":
            return
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword is not None else ""
            if keyword in _KEYWORDS:
                self.take(arg.value)
            elif keyword == "extras_require" and isinstance(arg.value, cst.Dict):
                for element in arg.value.elements:
                    if isinstance(element, cst.DictElement):
                        self.take(element.value)
            elif keyword == "extras_require" and isinstance(arg.value, cst.Name):
                self.names.add("\0dict:" + arg.value.value)

    def take(self, value: cst.BaseExpression) -> None:
        if isinstance(value, cst.Name):
            self.names.add(value.value)
        else:
            self.lists.append(value)

    def strings(self) -> list[cst.SimpleString]:
        found: list[cst.SimpleString] = []
        values = list(self.lists)
        for name in self.names:
            if name.startswith("\0dict:"):
                target = self.assigned.get(name[len("\0dict:") :])
                if isinstance(target, cst.Dict):
                    values.extend(e.value for e in target.elements if isinstance(e, cst.DictElement))
            elif name in self.assigned:
                values.append(self.assigned[name])
        for value in values:
            if isinstance(value, (cst.List, cst.Tuple)):
                found.extend(e.value for e in value.elements if isinstance(e.value, cst.SimpleString))
        return found
