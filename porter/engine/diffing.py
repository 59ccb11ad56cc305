"""Unified diffs that ``git apply`` accepts (including a missing newline at end of file)."""

from __future__ import annotations

import difflib


def unified_diff(old: str, new: str, path: str, context: int = 3) -> str:
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    out: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, f"a/{path}", f"b/{path}", n=context):
        if line.startswith(("---", "+++")):
            out.append(line.rstrip("\r\n") + "\n")
            continue
        if line.startswith("@@"):
            out.append(line)
            continue
        if not line.endswith(("\n", "\r")):
            out.append(line + "\n\\ No newline at end of file\n")
        else:
            out.append(line)
    return "".join(out)
