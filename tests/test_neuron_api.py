"""The signature table of the real ``torch.neuron`` (rules/_tables/neuron_api.py) covers what porter emits,
agrees with the emulated module ``porter check`` runs ports against, and drives the rules' argument
fixes (every CUDA signature the Neuron one does not accept is handled by cuda-namespace)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from porter.rules._tables import cuda as _cuda_table
from porter.rules._tables.neuron_api import ARGUMENT_FIXES, REQUIRED, TABLE, Param

ROOT = Path(__file__).resolve().parent.parent
# ``torch.neuron.<name>`` anywhere in porter's code, messages and docs (``X``/``Y`` are placeholders).
_EMITTED = re.compile(r"\btorch\.neuron\.([A-Za-z_]\w*)")


def _emittable() -> set[str]:
    names = set(_cuda_table.RENAMES) | set(_cuda_table.RENAMED.values())
    for folder in ("rules", "porter"):
        for path in (ROOT / folder).rglob("*.py"):
            names |= {n for n in _EMITTED.findall(path.read_text()) if n not in {"X", "Y"}}
    return names


def test_every_emittable_name_has_a_sourced_entry() -> None:
    names = _emittable()
    assert {"Stream", "Event", "set_device", "is_bf16_supported", "init", "is_initialized"} <= names
    missing = sorted(names - set(TABLE))
    assert not missing, f"torch.neuron names porter emits with no table entry: {missing}"
    for name in names:
        entry = TABLE[name]
        assert entry.sources, name
        for source in entry.sources:
            assert source.repo and source.path and len(source.commit) == 40 and source.symbol, (name, source)
        assert entry.verified or entry.note, f"{name}: an unverified entry must say why"


def test_names_without_a_neuron_counterpart_are_not_in_the_table() -> None:
    both = sorted(set(_cuda_table.NO_EQUIVALENT) & set(TABLE))
    assert not both, f"marked as missing on Neuron but the table has them: {both}"
    assert "mem_get_info" not in TABLE and "get_rng_state_all" not in TABLE


def _cuda_params(name: str) -> list[inspect.Parameter]:
    torch = pytest.importorskip("torch")
    return list(inspect.signature(getattr(torch.cuda, name)).parameters.values())


def _rejects(cuda: list[inspect.Parameter], neuron: tuple[Param, ...]) -> list[str]:
    """CUDA parameters a call could pass that the Neuron signature does not bind the same way."""
    by_name = {p.name: p for p in neuron}
    takes_kwargs = any(p.kind == "var_keyword" for p in neuron)
    positional = [p.name for p in neuron if p.kind == "positional_or_keyword"]
    problems = []
    for index, param in enumerate(cuda):
        if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        if param.name not in by_name and not takes_kwargs:
            problems.append(f"{param.name}= unknown")
        if param.kind == param.POSITIONAL_OR_KEYWORD and (index >= len(positional) or positional[index] != param.name):
            problems.append(f"positional {index} ({param.name}) binds differently")
    return problems


def test_every_signature_difference_is_an_argument_fix() -> None:
    renamed = set(_cuda_table.RENAMES) | set(_cuda_table.RENAMED)
    differing = {}
    for cuda_name in sorted(renamed):
        neuron_name = _cuda_table.RENAMED.get(cuda_name, cuda_name)
        problems = _rejects(_cuda_params(cuda_name), TABLE[neuron_name].params)
        if problems:
            differing[neuron_name] = problems
    unhandled = {name: why for name, why in differing.items() if name not in ARGUMENT_FIXES}
    assert not unhandled, f"renamed calls whose arguments Neuron rejects, with no fix in cuda-namespace: {unhandled}"
    # The known ones really are found by the comparison (the check can fail).
    assert {"Stream", "Event", "is_bf16_supported", "set_rng_state", "device"} <= set(differing)


def _emulated():  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    from porter.check.harness import neuron_module

    return neuron_module.build()


_KINDS = {
    "positional_or_keyword": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "keyword_only": inspect.Parameter.KEYWORD_ONLY,
    "var_keyword": inspect.Parameter.VAR_KEYWORD,
}


def test_emulated_module_has_the_real_signatures() -> None:
    module = _emulated()
    for name, entry in TABLE.items():
        assert hasattr(module, name), f"emulated torch.neuron lacks {name}"
        if entry.kind == "module":
            continue
        got = [
            (p.name, p.kind, REQUIRED if p.default is inspect.Parameter.empty else p.default)
            for p in inspect.signature(getattr(module, name)).parameters.values()
        ]
        want = [(p.name, _KINDS[p.kind], p.default) for p in entry.params]
        assert got == want, f"torch.neuron.{name}: emulated {got} != real {want}"


def test_emulated_module_has_nothing_the_real_one_lacks() -> None:
    module = _emulated()
    public = {name for name in vars(module) if not name.startswith("_")}
    assert public <= set(TABLE), sorted(public - set(TABLE))
    for name in _cuda_table.NO_EQUIVALENT:
        assert not hasattr(module, name), name


def test_emulated_properties_carry_only_the_real_attributes() -> None:
    props = _emulated().get_device_properties(0)
    real = TABLE["get_device_properties"].returns_attributes
    assert real == ("name", "total_memory")
    assert {a for a in dir(props) if not a.startswith("_")} == set(real)
