"""porter.engine.fastcst.splice: the ported text put together from the original text and the
rebuilt statements' code must be exactly libcst's code for the ported module, also when the
rebuilt statements sit in a class or def body (spliced there, indented as in their blocks)."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from porter.engine.core import _EditApplier
from porter.engine.fastcst import splice
from porter.engine.fastcst.splice import spliced
from porter.engine.fastcst.walk import TreeIndex
from porter.engine.rule import Edit

NESTED = '''\
import torch


class Model:
    """A model."""

    # a comment above the method
    def setup(self):
        self.x = torch.zeros(1).cuda()

    @staticmethod
    def helper(value):  # trailing
        if value:
            return value.cuda()
        return value

    class Inner:
        def deep(self):
            return 1

        def deeper(self):
            x = 1
            return x.cuda()
        # a comment at the end of the inner class body


def last():
\tparts = [torch.ones(1).cuda(), 2]
\treturn parts
'''


def _record_generated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The code each ``_Body.code`` call generates, in order (what a splice regenerates)."""
    generated: list[str] = []
    code = splice._Body.code

    def recorded(self: splice._Body, statements: list[cst.CSTNode], indents: list[str]) -> str:
        generated.append(code(self, statements, indents))
        return generated[-1]

    monkeypatch.setattr(splice._Body, "code", recorded)
    return generated


def _port(text: str, edit: str) -> tuple[cst.Module, cst.Module]:
    """The original module and the module after an edit of every ``cuda`` attribute (rename),
    every statement holding one (removal), or every such statement (a statement inserted before)."""
    module = cst.parse_module(text)
    index = TreeIndex(module)
    names = [n for n in index.preorder if isinstance(n, cst.Name) and n.value == "cuda"]
    edits: list[Edit] = []
    for name in names:
        statement: cst.CSTNode = name
        while not isinstance(statement, cst.SimpleStatementLine):
            statement = index.parents[statement]
        if edit == "rename":
            edits.append(Edit(target=name, code="T", order=(0, "T"), transform=lambda n: n.with_changes(value="neuron")))  # type: ignore[attr-defined]
        elif edit == "remove":
            edits.append(Edit(target=statement, code="T", order=(0, "T"), remove=True))
        else:
            edits.append(Edit(target=statement, code="T", order=(0, "T"), before=[cst.parse_statement("pass")]))
    return module, module.visit(_EditApplier(edits, index.parents))


@pytest.mark.parametrize("edit", ["rename", "remove", "insert"])
def test_spliced_text_is_libcsts_code(edit: str) -> None:
    module, new = _port(NESTED, edit)
    assert new.code != NESTED
    found = spliced(module, new, NESTED, ast.parse(NESTED))
    assert found == new.code


def test_a_method_edit_regenerates_the_method_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the edited statements' code is generated (old and new), indented as in their blocks."""
    generated = _record_generated(monkeypatch)
    module, new = _port(NESTED, "rename")
    assert spliced(module, new, NESTED, ast.parse(NESTED)) == new.code
    assert not any("class " in text or "def " in text for text in generated)
    assert "            return x.neuron()\n" in generated and "\tparts = [torch.ones(1).neuron(), 2]\n" in generated


def test_an_emptied_body_is_libcsts_pass() -> None:
    text = "class A:\n    def f(self):\n        x.cuda()\n"
    module, new = _port(text, "remove")
    assert spliced(module, new, text, ast.parse(text)) == new.code == "class A:\n    def f(self):\n        pass\n"


def test_a_file_without_a_final_newline_is_left_to_libcst() -> None:
    text = "class A:\n    def f(self):\n        return x.cuda()"
    module, new = _port(text, "rename")
    assert spliced(module, new, text, ast.parse(text)) is None


def test_a_comment_added_above_a_statement_regenerates_the_lines_above_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A review marker (a comment line added above a statement, nothing else changed) is put in
    without generating the statement's code; the text is libcst's code all the same."""
    generated = _record_generated(monkeypatch)
    module = cst.parse_module(NESTED)
    index = TreeIndex(module)
    marked = [n for n in index.preorder if isinstance(n, cst.SimpleStatementLine) and "cuda" in module.code_for_node(n)]
    comment = [cst.EmptyLine(comment=cst.Comment("# porter: NRN000 a marker"))]
    edits = [Edit(target=n, code="T", order=(0, "T"), transform=lambda n: n.with_changes(leading_lines=[*n.leading_lines, *comment]))  # type: ignore[attr-defined]
             for n in marked]
    new = module.visit(_EditApplier(edits, index.parents))
    assert spliced(module, new, NESTED, ast.parse(NESTED)) == new.code
    assert new.code.count("# porter: NRN000") == len(marked) > 3
    assert not any("cuda" in text for text in generated)


BLOCKS = '''\
import torch

def f(x):
    if x:
        a = x.cuda()
    elif x is None:
        b = x.cuda()
    else:
        c = x.cuda()
    for i in x:
        d = i.cuda()
    else:
        e = 1
    while x:
        g = x.cuda()
    with ctx() as y:
        h = y.cuda()
    try:
        k = x.cuda()
    except ValueError:
        m = x.cuda()
    except TypeError:
        n = 1
    else:
        o = x.cuda()
    finally:
        p = x.cuda()
'''


@pytest.mark.parametrize("edit", ["rename", "remove", "insert"])
def test_compound_statements_are_entered(edit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Edits in if/else, for, while, with and try clauses regenerate the statements edited there
    (an elif's are regenerated with their if), and the text is libcst's code."""
    generated = _record_generated(monkeypatch)
    module, new = _port(BLOCKS, edit)
    assert spliced(module, new, BLOCKS, ast.parse(BLOCKS)) == new.code
    assert not any(text.lstrip().startswith(("def ", "for ", "while ", "with ", "try:")) for text in generated)
    assert any(text.lstrip().startswith("if ") for text in generated)  # the if holding an elif
