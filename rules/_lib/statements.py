"""Statement-level helpers for rules that delete or move whole statements (no rule lives here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule

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
    """Delete one small statement (``x = 1`` / ``f()``) without leaving an empty block.

    ``removable`` says which sibling statements the rule deletes too: when every statement of
    the block is going, the first becomes ``pass`` so the block stays valid Python.
    """
    line = rule.parent(small)
    if not isinstance(line, cst.SimpleStatementLine):
        return
    if len(line.body) > 1:  # a; b on one line: drop only this part
        index = list(line.body).index(small)
        rule.replace(line, lambda n: _without(n, index), message, code=code, safety=safety)
        return
    body = block_body(rule, line)
    if body is None:  # a one-line suite: ``if x: torch.backends.cudnn.benchmark = True``
        rule.replace(small, cst.Pass(), message, code=code, safety=safety)
        return
    going = [statement for statement in body if removable(statement)]
    if len(going) == len(body) and going and going[0] is line and not isinstance(rule.parent(line), cst.Module):
        rule.replace(small, cst.Pass(), message, code=code, safety=safety)
        return
    rule.remove_statement(line, message, code=code, safety=safety)


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
