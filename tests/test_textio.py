"""Encodings, line endings and atomic writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from porter.engine.core import migrate_file, port_source
from porter.engine.results import Failure, Success, Unchanged
from porter.engine.textio import SourceError, write_atomic


@pytest.mark.parametrize(
    "source",
    [
        b"\xef\xbb\xbfimport torch\r\nx = torch.ones(1).cuda()\r\n",  # BOM + CRLF
        b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9'\nx = torch.ones(1).cuda()\n",
        b"import torch\r\ny = 1\nx = torch.ones(1).cuda()\r\n",  # mixed endings
        b"import torch\nif True:\n\tx = torch.ones(1).cuda()\n",  # tabs
        b"import torch\nx = torch.ones(1).cuda()",  # no newline at end
    ],
)
def test_encoding_and_newlines_are_preserved(source: bytes) -> None:
    result = port_source(source, "f.py")
    assert isinstance(result, Success)
    expected = source.replace(b".cuda()", b'.to("neuron")')
    assert result.new == expected


def test_unchanged_and_empty_files() -> None:
    assert isinstance(port_source(b"", "e.py"), Unchanged)
    assert isinstance(port_source(b"import os\n", "e.py"), Unchanged)


def test_python2_file_is_a_parse_error() -> None:
    result = port_source(b'print "cuda"\n', "old.py")
    assert isinstance(result, Failure) and "syntax error" in result.reason


def test_huge_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    path.write_bytes(b"x = 1  # cuda\n" * 400_000)
    result = migrate_file(str(path))
    assert isinstance(result, Failure) and "limit" in result.reason


def test_write_refuses_a_file_changed_after_reading(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"new content\n")
    with pytest.raises(SourceError, match="changed after it was read"):
        write_atomic(str(path), b"ported\n", expected=b"old content\n")
    assert path.read_bytes() == b"new content\n"


def test_write_keeps_permissions(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    path.chmod(0o751)
    write_atomic(str(path), b"new\n", expected=b"old\n")
    assert path.read_bytes() == b"new\n"
    assert path.stat().st_mode & 0o777 == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]
