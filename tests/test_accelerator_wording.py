"""--style accelerator writes device-generic code: the findings and markers of the rules that write
it must name what was written, never "neuron" (issue 15 leftovers: NRN201/202, NRN205/206, NRN109,
NRN901/NRN910)."""

from __future__ import annotations

import json
import re

import pytest

from porter.engine.results import Success
from tests.fixture_harness import FIXTURES, Case, options_for, ported

CODES = {"NRN109", "NRN201", "NRN202", "NRN205", "NRN206", "NRN901", "NRN910"}
# A device named "neuron" in advice or in a description of what was written; a table's "neuron"
# key is what the port writes in both styles (the device type looked up there on Trainium).
NEURON_DEVICE = re.compile(r"""(?<!== )["']neuron["']|=neuron\b|neuron device|Neuron when""")  # '== "neuron"': a device-generic test
TABLE = "table keyed by device"


def _accelerator_cases() -> list[Case]:
    found = []
    for options in sorted(FIXTURES.glob("*/*.options.json")):
        if json.loads(options.read_text()).get("style") == "accelerator":
            source = options.with_name(options.name.replace(".options.json", ".in.py"))
            if source.exists():
                found.append(Case(source))
    return found


CASES = _accelerator_cases()


def test_the_cases_cover_the_rules() -> None:
    folders = {case.folder for case in CASES}
    assert {"autocast-bf16", "grad-scaler", "data-parallel", "cuda-only-deps"} <= folders


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_accelerator_style_names_what_it_wrote(case: Case) -> None:
    result = ported(case.source.read_bytes(), case.source.name, options_for(case))
    if not isinstance(result, Success):
        return  # nothing written, nothing said (noop cases)
    for change in result.changes:
        if change.code in CODES and TABLE not in change.message:
            assert not NEURON_DEVICE.search(change.message), f"{case.id}:{change.line} {change.code} {change.message}"
