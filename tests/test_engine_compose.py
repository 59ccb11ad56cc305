"""The engine composes nested edits (inner first, the outer edit on the updated node) and refuses,
with a Failure naming the rules, an outer rewrite that would silently drop part of an expression."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.core import port_source
from porter.engine.results import Failure, Success
from porter.engine.rule import Rule


class _RenameInner(Rule):
    """Test rule.

    What it does: renames ``f`` to ``g``. Why: test. Before: f(1). After: g(1). Safety: test.
    """

    code: ClassVar[str] = "NRN001"
    name: ClassVar[str] = "test-inner"
    summary: ClassVar[str] = "f -> g"
    order: ClassVar[int] = 1

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "f":
            self.replace(node, lambda n: n.with_changes(value="g"), "f -> g")  # type: ignore[attr-defined]


class _FlattenOuter(Rule):
    """Test rule that rebuilds ``x.y(...).z`` from its spelling (as a buggy rename would).

    What it does: test. Why: test. Before: x.f(1).z. After: x.f.z. Safety: test.
    """

    code: ClassVar[str] = "NRN002"
    name: ClassVar[str] = "test-outer"
    summary: ClassVar[str] = "drops the call"
    order: ClassVar[int] = 2

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "z" and isinstance(node.value, cst.Call):
            self.replace(node, lambda n: cst.parse_expression("x.g.z"), "rebuilt")


class _DropOnPurpose(_FlattenOuter):
    """Test rule that declares the call it drops.

    What it does: test. Why: test. Before: x.f(1).z. After: x.g.z. Safety: test.
    """

    code: ClassVar[str] = "NRN003"
    name: ClassVar[str] = "test-declared"

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "z" and isinstance(node.value, cst.Call):
            self.replace(node, lambda n: cst.parse_expression("x.g.z"), "rebuilt", drops_calls=True)


SOURCE = b"y = x.f(1).z\n"


def test_nested_edits_compose_inner_first() -> None:
    result = port_source(b"y = f(f(1))\n", "t.py", rules=[_RenameInner])
    assert isinstance(result, Success) and result.new == b"y = g(g(1))\n"


def test_outer_edit_that_loses_a_call_is_refused_naming_both_rules() -> None:
    result = port_source(SOURCE, "t.py", rules=[_RenameInner, _FlattenOuter])
    assert isinstance(result, Failure) and result.kind == "conflict"
    assert "NRN002" in result.reason and "NRN001" in result.reason and "x.g(1).z" in result.reason


def test_a_declared_call_drop_is_applied() -> None:
    result = port_source(SOURCE, "t.py", rules=[_DropOnPurpose])
    assert isinstance(result, Success) and result.new == b"y = x.g.z\n"


def test_rules_never_match_module_names_through_a_call() -> None:
    # libcst names `torch.cuda.get_device_properties(0).total_memory` as if it were a module
    # attribute; the port must keep the call (it once became `...get_device_properties.total_memory`).
    source = b"import torch\nm = torch.cuda.get_device_properties(0).total_memory\n"
    result = port_source(source, "t.py")
    assert isinstance(result, Success)
    assert b"get_device_properties(0).total_memory" in result.new


def test_an_emptied_if_never_takes_another_if_with_it() -> None:
    """Corpus review round 8, H15: the engine remembered the blocks it emptied by ``id()`` alone;
    a freed block's id was given to a block built later, whose ``if`` was then deleted with no
    change recorded (lightning's CUBLAS_WORKSPACE_CONFIG switch, about 1 port in 10). The same
    bytes on every one of many ports in one process (ids are reused within a process)."""
    import json
    from pathlib import Path

    from porter.engine.options import Options

    case = Path(__file__).parent / "fixtures" / "_corpus" / "if_removed_block_id_reuse"
    source = case.with_suffix(".in.py").read_bytes()
    expected = case.with_suffix(".out.py").read_bytes()
    options = Options(**json.loads(case.with_suffix(".options.json").read_text()))
    outputs = {port_source(source, "connector.py", options).new for _ in range(150)}  # type: ignore[union-attr]
    assert outputs == {expected}


# An edit that needs `import torch` where the file binds torch under a module-level condition
# (transformers' `if is_torch_available(): import torch`): the port adds no unconditional import
# (trainer_utils.py got one, and libcst's import adder cost 4 of its 6 s); under `if TYPE_CHECKING:`
# torch is not bound when the file runs, so the import is added; `import torch.nn` binds torch.
_XLA_RANK = "def rank():\n    import torch_xla.runtime as xr\n\n    return xr.global_ordinal()\n"


def test_a_conditional_module_level_import_is_an_import() -> None:
    for head in ("if is_torch_available():\n    import torch\n", "try:\n    import torch\nexcept ImportError:\n    torch = None\n",
                 "import torch.nn\n"):
        result = port_source(f"{head}\n\n{_XLA_RANK}".encode(), "t.py")
        assert isinstance(result, Success) and b"torch.distributed.get_rank()" in result.new, head
        assert result.new.count(b"import torch") == 1, result.new.decode()


def test_a_type_checking_import_is_not_an_import() -> None:
    head = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n"
    result = port_source(f"{head}\n\n{_XLA_RANK}".encode(), "t.py")
    assert isinstance(result, Success) and result.new.count(b"import torch\n") == 2, result.new.decode()
