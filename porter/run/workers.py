"""Loaded once by the batch's fork server, so each worker it forks starts with the engine
and the discovered rules in memory instead of importing libcst and the rules again."""

from __future__ import annotations

import gc
import os

import porter
import porter.engine.core  # noqa: F401
from porter.engine.registry import all_rules

all_rules()
# Loaded once and never garbage: the collector's full passes skip it from now on (in every worker).
gc.freeze()


def where() -> str:
    """The folder of the ``porter`` package this process runs (the batch checks that its
    workers run the same code as itself)."""
    return os.path.dirname(os.path.abspath(porter.__file__ or ""))
