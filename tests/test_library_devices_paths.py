"""NRN116's torchtune get_device marker is for recipes, not for torchtune's own package (corpus
review round 9, W9-2): the ported package's get_device fills in the device index itself."""

from __future__ import annotations

from pathlib import Path

from porter.engine.core import port_source
from porter.engine.options import Options

CASE = Path(__file__).parent / "fixtures" / "_corpus" / "torchtune_get_device_distributed.in.py"


def _markers(path: str) -> list[int]:
    result = port_source(CASE.read_bytes(), path, Options(repo_in_port=True))
    return [change.line for change in getattr(result, "changes", ()) if change.code == "NRN116" and "get_device" in change.message]


def test_a_recipe_gets_the_marker() -> None:
    assert _markers("recipes/full_finetune_distributed.py")
    assert _markers("torchtune/recipes/full_finetune_distributed.py")  # a clone named torchtune


def test_torchtunes_own_package_does_not() -> None:
    assert not _markers("torchtune-0.6.1/torchtune/training/_distributed.py")
