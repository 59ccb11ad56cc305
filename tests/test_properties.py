"""Property-based tests: random programs with CUDA-isms injected port to code that parses, is
idempotent, and keeps every line no rule matched."""

from __future__ import annotations

import hypothesmith
import libcst as cst
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from porter.engine.core import port_source
from porter.engine.options import Options
from porter.engine.results import Failure, Success

HEADER = "import math\nimport torch\nimport torch.distributed as dist\nfrom torch.cuda.amp import autocast, GradScaler\n"

# Statements a CUDA training script is made of; each is valid at any indentation level.
CUDA_STATEMENTS = [
    "x = x.cuda()",
    "x = x.cuda(non_blocking=True)",
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    'device_type = "cuda" if "cuda" in device else "cpu"',
    "torch.cuda.synchronize()",
    "torch.cuda.manual_seed_all(0)",
    "torch.backends.cudnn.benchmark = True",
    "scaler = GradScaler()",
    "scaler.scale(loss).backward()",
    "scaler.step(optimizer)",
    "scaler.update()",
    'dist.init_process_group("nccl")',
    "optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)",
    "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)",
    "running += loss.item()",
    'print(f"loss {loss.item():.4f}")',
    "losses.append(loss.item())",
    "loss.backward()",
    "optimizer.step()",
    "model = torch.compile(model)",
    "loader = torch.utils.data.DataLoader(dataset, batch_size=8, shuffle=True)",
    "peak = torch.cuda.max_memory_allocated()",
    "free, total = torch.cuda.mem_get_info()",
    "y = model(x).double()",
]
PLAIN_STATEMENTS = ["a = 1", "b = a + 2", "print('hello cuda')", "pass", "c = [i for i in range(3)]"]


def _block(depth: int) -> st.SearchStrategy[list[str]]:
    line = st.sampled_from(CUDA_STATEMENTS + PLAIN_STATEMENTS).map(lambda s: [s])
    if depth == 0:
        return st.lists(line, min_size=1, max_size=4).map(lambda ls: [s for group in ls for s in group])
    header = st.sampled_from(
        [
            "for step, (x, y) in enumerate(loader):",
            "for x in loader:",
            "while step < 10:",
            "if step % 10 == 0:",
            "with autocast():",
            "with torch.no_grad():",
            "def train(model, loader, optimizer):",
            "if not math.isfinite(loss.item()):",
        ]
    )
    nested = st.tuples(header, _block(depth - 1)).map(lambda hb: [hb[0], *("    " + s for s in hb[1])])
    return st.lists(st.one_of(line, nested), min_size=1, max_size=4).map(lambda ls: [s for group in ls for s in group])


def _check(source: str, options: Options) -> Success | None:
    data = source.encode()
    result = port_source(data, "prop.py", options)
    assert not (isinstance(result, Failure) and result.kind == "internal"), result
    if not isinstance(result, Success):
        return None
    cst.parse_module(result.new)
    compile(result.new, "prop.py", "exec")
    again = port_source(result.new, "prop.py", options)
    assert not isinstance(again, Success), "not idempotent:\n" + result.new_text + "\n---\n" + again.new_text
    return result


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_block(2), all_files=st.booleans())
def test_training_shaped_programs_port_safely(lines: list[str], all_files: bool) -> None:
    _check(HEADER + "\n".join(lines) + "\n", Options(all_files=all_files))


# No target phase: hypothesmith's generator reports targets, and hill-climbing them grows programs
# without bound (a run spent minutes there); the examples themselves are what this test is about.
@settings(
    max_examples=15,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(program=hypothesmith.from_node(), injected=st.lists(st.sampled_from(CUDA_STATEMENTS), min_size=1, max_size=3))
def test_random_programs_keep_every_unmatched_line(program: str, injected: list[str]) -> None:
    try:
        compile(program, "gen.py", "exec")
        cst.parse_module(program)
    except Exception:
        assume(False)
    assume("cuda" not in program and "neuron" not in program and "# porter" not in program)
    source = HEADER + program.rstrip("\n") + "\n" + "\n".join(injected) + "\n"
    result = _check(source, Options())
    if result is None:
        return
    # Every line of the generated program survives, in order (rules only touched injected code).
    # Blank lines are layout, not logic: the engine may move them with a statement it removes
    # (this oracle once failed on program="\n").
    output = iter(result.new_text.splitlines())
    for line in program.splitlines():
        if line.strip():
            assert any(out == line for out in output), f"line lost or changed: {line!r}"


# ---------------------------------------------------------------------------------------------
# Engine composition (issue 15 §4): porting with every rule at once gives the same program as
# applying the rules one by one, in registry order, each to the previous one's output.

import ast  # noqa: E402
import re  # noqa: E402
from dataclasses import replace  # noqa: E402

import pytest  # noqa: E402

from porter.engine.registry import all_rules  # noqa: E402
from tests.fixture_harness import cases, options_for, ported  # noqa: E402

_MARKER = re.compile(r"#\s*porter:.*")
_LINE_REF = re.compile(r"\bline \d+\b")

# Remaining differences, each with why (a fixed case must leave the list: the stale check).
COMPOSE_KNOWN: dict[str, str] = {}


def _bindings(statement: ast.stmt) -> set[tuple[str, str, str]]:
    if isinstance(statement, ast.Import):
        return {(alias.name, "", alias.asname or "") for alias in statement.names}
    assert isinstance(statement, ast.ImportFrom)
    return {(f"{'.' * statement.level}{statement.module or ''}", alias.name, alias.asname or "") for alias in statement.names}


class _AutocastKeyword(ast.NodeTransformer):
    """``torch.autocast("neuron", ...)`` == ``torch.autocast(device_type="neuron", ...)``: the
    first parameter of torch.autocast/torch.amp.autocast is ``device_type``."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = ast.unparse(node.func)
        if name.split(".")[-1] in ("autocast", "generic_autocast") and node.args and not isinstance(node.args[0], ast.Starred):
            node.keywords.insert(0, ast.keyword(arg="device_type", value=node.args[0]))
            node.args = node.args[1:]
        return node


def _normalised(text: str) -> tuple[str, list[str]]:
    """The program modulo what cannot change it: the grouping and order of a run of top-level
    imports with nothing between them (the same names bound), the positional or keyword spelling
    of autocast's device type, and the line numbers markers cite (they cite the file the rule
    saw, which in a sequence is an intermediate file). Markers are compared as text, in order."""
    tree = _AutocastKeyword().visit(ast.parse(text))
    body: list[object] = []
    run: set[tuple[str, str, str]] = set()
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            run |= _bindings(statement)
            continue
        if run:
            body.append(sorted(run))
            run = set()
        body.append(ast.dump(statement))
    if run:
        body.append(sorted(run))
    markers = [_LINE_REF.sub("line N", match.group(0)) for match in _MARKER.finditer(text)]
    return repr(body), markers


def _sequence(data: bytes, case_id: str, options: Options, in_port: bool) -> bytes:
    # The port context (context-only rules act only in a ported file) is the all-at-once one:
    # rule by rule, a context-only rule that runs before the porting rules would otherwise drop.
    # all_files gives that context and nothing else (repo_in_port also means "a repository port",
    # where NRN821 acts only in entry scripts).
    options = replace(options, all_files=options.all_files or in_port)
    for rule in all_rules():
        result = port_source(data, case_id, options, rules=[rule])
        assert not (isinstance(result, Failure) and result.kind == "internal"), result
        if isinstance(result, Success):
            data = result.new
    return data


@pytest.mark.slow
def test_all_rules_at_once_equal_rule_by_rule() -> None:
    """~150 s on the shared 2-core machine (45 rules x every fixture): marked slow."""
    differ: dict[str, str] = {}
    for case in cases():
        options = replace(options_for(case), select=())
        data = case.source.read_bytes()
        together = port_source(data, case.id, options)
        assert not (isinstance(together, Failure) and together.kind == "internal"), together
        at_once = together.new if isinstance(together, Success) else data
        one_by_one = _sequence(data, case.id, options, isinstance(together, Success))
        if _normalised(at_once.decode()) != _normalised(one_by_one.decode()):
            differ[case.id] = "differs"
    new = sorted(set(differ) - set(COMPOSE_KNOWN))
    assert not new, f"all rules at once != rule by rule: {new}"
    stale = sorted(set(COMPOSE_KNOWN) - set(differ))
    assert not stale, f"fixed (remove from COMPOSE_KNOWN): {stale}"


@pytest.mark.corpus  # a sweep over every fixture: out of the fast loop, still in CI
@pytest.mark.parametrize("style", ["neuron", "accelerator"])
def test_every_fixture_ports_in_either_style_without_an_internal_error(style: str) -> None:
    """Fixtures run in their own options; the other style must not crash on them either
    (``match d.type: case "cuda":`` made NRN101 write a call into a pattern in accelerator style)."""
    broken = []
    for case in cases():
        result = ported(case.source.read_bytes(), case.source.name, replace(options_for(case), style=style))
        if isinstance(result, Failure) and result.kind in ("internal", "conflict"):
            broken.append(f"{case.id}: {result.reason}")
    assert not broken, "\n".join(broken)
