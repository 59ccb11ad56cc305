"""Editing call arguments: find, set, drop and add keywords, keeping the call's layout."""

from __future__ import annotations

import libcst as cst


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    plain = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return plain[index] if index < len(plain) else None


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


def _multiline_separator(call: cst.Call) -> cst.Comma | None:
    """The comma (with its newline and indentation) between arguments of a multi-line call."""
    for arg in call.args[:-1]:
        if isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
            return arg.comma
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return cst.Comma(whitespace_after=call.whitespace_before_args)
    return None


def set_keyword_keep_layout(call: cst.Call, name: str, value: cst.BaseExpression, *, closing: bool = True) -> cst.Call:
    """Like ``set_keyword``, but an appended keyword in a multi-line call goes on its own line,
    indented like the other arguments (the trailing comma, if any, stays last). Also right when the
    closing parenthesis sits on its own line after a last argument without a trailing comma: the
    whitespace before ``)`` (held by the last argument) moves to the new last argument instead of
    ending up between the two (``closing=False`` leaves it there)."""
    if keyword(call, name) is not None or not call.args:
        return set_keyword(call, name, value)
    separator = _multiline_separator(call)
    if separator is None:
        return set_keyword(call, name, value)
    args = list(call.args)
    last = args[-1]
    # A comment at the end of the last argument's line stays on that line, with that argument; the
    # separator's own comment (another argument's) is not copied.
    trailing = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else last.whitespace_after_arg
    own = trailing.first_line if isinstance(trailing, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
    assert isinstance(separator.whitespace_after, cst.ParenthesizedWhitespace)
    separator = separator.with_changes(whitespace_after=separator.whitespace_after.with_changes(first_line=own))
    comma = last.comma.with_changes(whitespace_after=_no_comment(last.comma.whitespace_after)) \
        if isinstance(last.comma, cst.Comma) else last.comma
    if closing:
        args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
        args.append(make_arg(name, value).with_changes(comma=comma, whitespace_after_arg=_no_comment(last.whitespace_after_arg)))
    else:
        args[-1] = last.with_changes(comma=separator)
        args.append(make_arg(name, value).with_changes(comma=comma))
    return call.with_changes(args=args)


def _no_comment(whitespace: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """The same line break and indentation, without the comment that ended the line."""
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace.with_changes(first_line=cst.TrailingWhitespace())
    return whitespace


def add_keyword_keep_layout(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``set_keyword_keep_layout`` that also handles a closing parenthesis on its own line."""
    return set_keyword_keep_layout(call, name, value, closing=True)
