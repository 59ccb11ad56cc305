"""porter.engine.fastcst.walk.TreeIndex must give exactly what ``node.children`` / ``m.findall`` give."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import libcst.matchers as m

from porter.engine.fastcst.walk import TreeIndex

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "samples").glob("*.py"))


def _index(source: str) -> tuple[cst.Module, TreeIndex]:
    module = cst.parse_module(source)
    return module, TreeIndex(module)


def test_children_match_libcst_on_samples() -> None:
    assert SAMPLES
    for path in SAMPLES:
        module, index = _index(path.read_text())
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            assert list(index.of(node)) == list(node.children), (path, type(node).__name__)
            stack.extend(node.children)


def test_find_matches_findall_order() -> None:
    module, index = _index(SAMPLES[0].read_text())
    assert index.find(module, cst.Call, cst.Name) == m.findall(module, m.Call() | m.Name())
    function = next(n for n in module.body if isinstance(n, (cst.FunctionDef, cst.ClassDef)))
    assert index.find(function, cst.Call) == m.findall(function, m.Call())


def test_foreign_node_falls_back_to_children() -> None:
    _, index = _index("x = f(1)\n")
    built = cst.parse_expression("g(a, b)")
    assert list(index.of(built)) == list(built.children)
    assert [n for n in index.walk(built) if isinstance(n, cst.Name)] == m.findall(built, m.Name())


def test_visit_original_matches_visit() -> None:
    from porter.rules._lib.tree import visit_original

    class Events(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[tuple[str, str]] = []

        def visit_Call(self, node: cst.Call) -> None:
            self.seen.append(("call", type(node.func).__name__))

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            self.seen.append(("from", ""))
            return False  # children skipped: their Names never reach visit_Name

        def visit_Name(self, node: cst.Name) -> None:
            self.seen.append(("name", node.value))

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            self.seen.append(("leave", original_node.name.value))

    for path in SAMPLES:
        module, index = _index(path.read_text())
        expected, actual = Events(), Events()
        module.visit(expected)
        visit_original(index, module, actual)
        assert actual.seen == expected.seen, path
