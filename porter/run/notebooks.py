"""Jupyter notebooks (``.ipynb``): port the code cells, leave everything else as it was.

The code cells are joined into one module (cells separated by a ``# porter-cell:N`` comment line)
so a name imported in one cell resolves in the next, ported by the engine, and split back. IPython
syntax that is not Python — line magics ``%time x``, shell escapes ``!pip install``, ``files = !ls``,
help ``obj?`` — is masked with a placeholder statement before parsing and restored afterwards.
Cell magics (``%%bash``) make the whole cell non-Python and it is left alone, except the
Python-bodied ones (``%%time``, ``%%timeit``, ``%%capture``, ...) whose first line is masked.
A cell that still does not parse is left alone too. Outputs, metadata, markdown cells and the
other cells are untouched; the notebook is written back with the JSON layout it was read with
(indent, ASCII escaping, key order, final newline), and a notebook with nothing to port is not
rewritten at all. Change lines are the cell's own lines, and the message names the cell.
"""

from __future__ import annotations

import json
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, replace
from io import StringIO
from typing import Any

from porter.engine.options import Options
from porter.engine.results import Failure, FileResult, Success, Unchanged
from porter.engine.textio import SourceError, check_bytes

SEPARATOR = "# porter-cell:{}"
_SEPARATOR = re.compile(r"^# porter-cell:(\d+)\n", re.M)
_PLACEHOLDER = "pass  # porter-magic:{}"
_PLACEHOLDER_LINE = re.compile(r"^([ \t]*)pass  # porter-magic:(\d+)$")
_ASSIGNED_MAGIC = re.compile(r"^[ \t]*[A-Za-z_][\w., \t]*=[ \t]*[%!]")
# Cell magics whose body is Python: the magic line is masked and the body ported.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "py", "python", "python3"})


@dataclass
class _Cell:
    index: int  # position among all cells (0-based)
    text: str  # masked source
    magics: list[str]  # original lines, by placeholder number
    ends_with_newline: bool
    as_list: bool  # source stored as a list of lines (nbformat) or one string


def port_notebook(data: bytes, path: str, options: Options | None = None) -> FileResult:
    """Port a notebook's bytes. Never raises for a bad notebook."""
    options = options or Options()
    try:
        check_bytes(data, options.max_file_size)
        text = data.decode("utf-8-sig")
    except SourceError as error:
        return Failure(path, str(error), kind="read")
    except UnicodeDecodeError as error:
        return Failure(path, f"notebook is not valid utf-8 at byte {error.start}", kind="read")
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        return Failure(path, f"not a valid notebook (JSON error at line {error.lineno}: {error.msg})", kind="parse")
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or not _is_python(notebook):
        return Unchanged(path, skipped="not a Python notebook")
    code_cells = [cell for cell in (_prepare(i, raw) for i, raw in enumerate(cells)) if cell is not None]
    if not code_cells:
        return Unchanged(path, skipped="no code cells")
    combined, starts = _combine(code_cells)

    from porter.engine.core import port_source  # lazily: a cached run never needs libcst

    result = port_source(combined.encode("utf-8"), path, options)
    if not isinstance(result, Success):
        return result
    pieces = _split(result.new.decode("utf-8"), len(code_cells))
    if pieces is None:
        return Failure(path, "internal error: cell boundaries were lost in the port; notebook left as it was", kind="internal")
    changed = False
    for cell, piece in zip(code_cells, pieces):
        restored = _unmask(piece, cell.magics)
        original = _unmask(cell.text, cell.magics)
        if restored != original:
            cells[cell.index]["source"] = _as_source(restored, cell)
            changed = True
    # Verifier lines are those of the cells joined in order (as the notebook's code reads).
    if not changed:
        return Unchanged(path, findings=result.findings)
    new = dump_like(notebook, data)
    if new == data:
        return Unchanged(path, findings=result.findings)
    changes = tuple(_relocate(change, code_cells, starts) for change in result.changes)
    return Success(path, old=data, new=new, encoding="utf-8", changes=changes, findings=result.findings)


def _is_python(notebook: dict[str, Any]) -> bool:
    metadata = notebook.get("metadata") or {}
    language = (metadata.get("kernelspec") or {}).get("language") or (metadata.get("language_info") or {}).get("name")
    return language is None or str(language).lower() == "python"


def _prepare(index: int, raw: Any) -> _Cell | None:
    if not isinstance(raw, dict) or raw.get("cell_type") != "code":
        return None
    source = raw.get("source", "")
    as_list = isinstance(source, list)
    text = "".join(source) if as_list else str(source)
    masked = mask_magics(text)
    if masked is None:
        return None
    body, magics = masked
    if not _parses(body):
        return None
    return _Cell(index, body if body.endswith("\n") or not body else body + "\n", magics, text.endswith("\n"), as_list)


def mask_magics(text: str) -> tuple[str, list[str]] | None:
    """``text`` with IPython-only lines replaced by placeholders, and the lines replaced.

    None for a cell whose magic makes the whole cell non-Python (``%%bash``, ``%%html`` ...).
    """
    lines = text.split("\n")
    magics: list[str] = []
    out: list[str] = []
    first = next((line for line in lines if line.strip()), "")
    if first.lstrip().startswith("%%"):
        name = first.lstrip()[2:].split(None, 1)[0] if first.strip() != "%%" else ""
        if name not in PYTHON_CELL_MAGICS:
            return None
    for line in lines:
        if _is_magic(line) and _statement_starts(out):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + _PLACEHOLDER.format(len(magics)))
            magics.append(line)
        else:
            out.append(line)
    return "\n".join(out), magics


def _is_magic(line: str) -> bool:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return False
    return stripped.startswith(("%", "!")) or stripped.endswith("?") or bool(_ASSIGNED_MAGIC.match(line))


def _statement_starts(previous: Sequence[str]) -> bool:
    """Whether the next line begins a new statement (not inside brackets, a string or after ``\\``)."""
    if not previous:
        return True
    source = "\n".join(previous) + "\n"
    try:
        for _ in tokenize.generate_tokens(StringIO(source).readline):
            pass
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return False
    return True


def _parses(text: str) -> bool:
    import ast

    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _combine(cells: Sequence[_Cell]) -> tuple[str, list[int]]:
    parts: list[str] = []
    starts: list[int] = []  # 1-based line where each cell's code starts in the combined module
    line = 1
    for position, cell in enumerate(cells):
        if position:
            parts.append(SEPARATOR.format(position) + "\n")
            line += 1
        starts.append(line)
        parts.append(cell.text)
        line += cell.text.count("\n")
    return "".join(parts), starts


def _split(text: str, count: int) -> list[str] | None:
    pieces: list[str] = []
    last = 0
    expected = 1
    for match in _SEPARATOR.finditer(text):
        if int(match.group(1)) != expected:
            return None
        pieces.append(text[last : match.start()])
        last = match.end()
        expected += 1
    pieces.append(text[last:])
    return pieces if len(pieces) == count else None


def _unmask(text: str, magics: Sequence[str]) -> str:
    def restore(line: str) -> str:
        match = _PLACEHOLDER_LINE.match(line)
        if match is None or int(match.group(2)) >= len(magics):
            return line
        return magics[int(match.group(2))]

    return "\n".join(restore(line) for line in text.split("\n"))


def _as_source(text: str, cell: _Cell) -> list[str] | str:
    if not cell.ends_with_newline and text.endswith("\n"):
        text = text[:-1]
    if not cell.as_list:
        return text
    return text.splitlines(keepends=True)


def _relocate(change: Any, cells: Sequence[_Cell], starts: Sequence[int]) -> Any:
    position = max(i for i, start in enumerate(starts) if start <= change.line) if change.line >= starts[0] else 0
    line = change.line - starts[position] + 1
    return replace(change, line=line, message=f"[cell {cells[position].index + 1}] {change.message}")


def dump_like(notebook: Any, original: bytes) -> bytes:
    """``notebook`` as JSON laid out like ``original``: indent, ASCII escaping, final newline."""
    text = original.decode("utf-8-sig")
    indent = _indent_of(text)
    ascii_only = text.isascii() and re.search(r"\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])[0-9a-fA-F]{2}", text) is not None
    separators = (",", ": ") if indent is not None else ((", ", ": ") if ", " in text[:200] else (",", ":"))
    dumped = json.dumps(notebook, indent=indent, ensure_ascii=ascii_only, separators=separators)
    if text.endswith("\n"):
        dumped += "\n"
    prefix = "\ufeff" if original.startswith(b"\xef\xbb\xbf") else ""
    return (prefix + dumped).encode("utf-8")


def _indent_of(text: str) -> int | str | None:
    match = re.search(r"^\{\r?\n([ \t]+)\S", text)
    if match is None:
        return None
    whitespace = match.group(1)
    return len(whitespace) if set(whitespace) == {" "} else whitespace
