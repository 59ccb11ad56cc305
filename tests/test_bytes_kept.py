"""Every byte a port does not own is kept, including those libcst itself drops; a NUL byte anywhere
is a clear per-file reason."""

from __future__ import annotations

import pytest

from porter.engine.core import port_source
from porter.engine.results import Failure, Success

PORTED = b"import torch\nx = torch.zeros(1).cuda()\n"


@pytest.mark.parametrize(
    ("head", "tail"),
    [(b"\x0c", b""), (b"\x0c\x0c", b""), (b"", b"\r"), (b"\x0c", b"\r")],
    ids=["form-feed", "two-form-feeds", "final-lone-cr", "both"],
)
def test_bytes_libcst_drops_are_kept(head: bytes, tail: bytes) -> None:
    source = head + PORTED.rstrip(b"\n") + tail
    result = port_source(source, "t.py")
    assert isinstance(result, Success)
    assert result.new.startswith(head) and result.new.endswith(tail)
    assert result.new == head + b'import torch\nx = torch.zeros(1).to("neuron")' + tail


def test_nul_byte_after_the_first_64_kib_names_its_line() -> None:
    source = PORTED + b"#" * 70_000 + b"\n\x00\n"
    result = port_source(source, "t.py")
    assert isinstance(result, Failure) and result.kind == "read"
    assert "binary file (a NUL byte at line 4," in result.reason
