"""NRN103 keeps a torch.cuda function that is an entry of a table keyed by device type, and only
there (rules/cuda_namespace.py: ``_table_key``; the fixture cuda-namespace/device_keyed_table holds
the table cases, shaped like transformers' testing_utils)."""

from __future__ import annotations

from porter.engine.results import Success
from tests.fixture_harness import ported

TABLE_MARKER = "entry of a table keyed by device type"


def _port(source: str) -> str:
    result = ported(source.encode())
    assert isinstance(result, Success)
    return result.new.decode()


def test_string_keys_that_are_not_device_types_are_not_a_device_table() -> None:
    out = _port('import torch\n\ndef hooks():\n    return {"seed": torch.cuda.manual_seed, "name": "run"}\n')
    assert TABLE_MARKER not in out
    assert "torch.neuron.manual_seed" in out


def test_a_subscript_assignment_under_a_key_that_is_not_a_device_type_is_ported() -> None:
    out = _port('import torch\n\ndef hooks(table):\n    table["seed"] = torch.cuda.manual_seed\n')
    assert TABLE_MARKER not in out


def test_a_device_keyed_entry_is_kept_with_its_key_named() -> None:
    out = _port('import torch\n\nTABLE = {"cuda": torch.cuda.synchronize, "default": None}\n')
    assert 'TABLE = {"cuda": torch.cuda.synchronize, "default": None}' in out
    assert 'torch.cuda.synchronize: the "cuda" entry of a table keyed by device type, kept' in out
