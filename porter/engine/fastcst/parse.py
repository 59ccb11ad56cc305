"""libcst's parse at the cost of the parse: no per-node checks, no cyclic garbage collection.

Measured on the transformers tree (``bench/batch.py``): about half of ``libcst.parse_module`` is
the cyclic garbage collector walking the growing tree (hundreds of thousands of new objects per
large file; a libcst tree holds no reference cycles, reference counting frees it) and most of
the rest ``CSTNode.__post_init__``'s ``_validate``, which checks invariants of nodes built by
hand (libcst's own note there: "avoid validating the tree when parsing a file"). The parser
builds only nodes that pass it; a file where libcst would refuse one of its own nodes is ported
here rather than refused, and its output is still re-parsed before porter hands it back
(``core._parses``).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import libcst as cst
from libcst._nodes.base import CSTNode

T = TypeVar("T")


@contextmanager
def no_collection() -> Iterator[None]:
    """The cyclic garbage collector off for the block (on again after, if it was on)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _unchecked(self: CSTNode) -> None:
    """``CSTNode.__post_init__`` without ``_validate``."""


def parse_module(data: bytes) -> cst.Module:
    """``libcst.parse_module(data)``, its nodes not re-validated one by one as they are built."""
    checked: Callable[[CSTNode], None] = CSTNode.__post_init__
    CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign, assignment]
    try:
        with no_collection():
            return cst.parse_module(data)
    finally:
        CSTNode.__post_init__ = checked  # type: ignore[method-assign, assignment]
