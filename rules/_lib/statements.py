"""Statement-level helpers for rules that delete or move whole statements (no rule lives here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import NodeTransform, Rule

StatementTest = Callable[[cst.BaseStatement], bool]


def block_body(rule: Rule, statement: cst.BaseStatement) -> Sequence[cst.BaseStatement] | None:
    """The statements of the block (module or indented suite) that holds ``statement``."""
    parent = rule.parent(statement)
    if isinstance(parent, (cst.Module, cst.IndentedBlock)):
        return parent.body
    return None


def remove_small(
    rule: Rule,
    small: cst.BaseSmallStatement,
    removable: StatementTest,
    message: str,
    *,
    code: str | None = None,
    safety: Safety | None = None,
) -> None:
    """Delete one small statement (``x = 1`` / ``f()``).

    The engine keeps the block valid (an emptied block gets ``pass``; an ``if`` with a pure test
    around nothing but removed statements goes too). ``removable`` is kept for callers that
    decide sibling by sibling; each sibling is removed by its own call.
    """
    line = rule.parent(small)
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) > 1:  # a; b on one line: drop only this part
        index = list(line.body).index(small)
        rule.replace(line, lambda n: _without(n, index), message, code=code, safety=safety)
        return
    if isinstance(line, cst.SimpleStatementLine):
        rule.remove_statement(line, message, code=code, safety=safety)
    elif isinstance(line, cst.SimpleStatementSuite):  # ``if x: torch.backends.cudnn.benchmark = True``
        rule.remove_statement(small, message, code=code, safety=safety)  # type: ignore[arg-type]


def _without(line: cst.CSTNode, index: int) -> cst.CSTNode:
    assert isinstance(line, cst.SimpleStatementLine)
    body = [small for position, small in enumerate(line.body) if position != index]
    body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return line.with_changes(body=body)


def single_small(statement: cst.BaseStatement) -> cst.BaseSmallStatement | None:
    """The one small statement of a simple statement line, else None."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        return statement.body[0]
    return None


def wrapped_in_if(test: cst.BaseExpression, following: Sequence[cst.BaseStatement] = ()) -> NodeTransform:
    """A transform of a statement line: ``if test:`` around it and ``following`` (the statements
    right after it, which the caller removes from where they were; they must carry no comment or
    blank lines of their own, which the engine would move on from a removed statement). The lines
    above the statement stay above the ``if``."""

    def transform(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.SimpleStatementLine)
        body = cst.IndentedBlock(body=[updated.with_changes(leading_lines=[]), *following])
        return cst.If(test=test, body=body, leading_lines=updated.leading_lines)

    return transform
