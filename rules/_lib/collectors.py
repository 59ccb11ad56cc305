"""torchrl collectors as a script uses them: where it reads their batches, whether it syncs their
policy, what a device name is bound to. No rule lives here (NRN116 uses it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import ScopeProvider

from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.args import keyword, positional
from porter.rules._lib.imports import project_function, top_level
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.tree import child_index, name_bindings, visit_original


@dataclass(frozen=True)
class BatchRead:
    """One place a script receives a collector's batch: a loop over it (the batch is the loop's
    ``batch``), ``batch = next(it)`` as a statement of its own, or a ``next(it)`` inside an
    expression (``call``; ``batch`` None)."""

    statement: cst.For | cst.SimpleStatementLine | None  # None: next() not in a line of a block
    batch: str | None
    call: cst.Call | None = None

    @property
    def loop(self) -> bool:
        return isinstance(self.statement, cst.For)


def batch_reads(rule: Rule, scope: cst.CSTNode, collector: str) -> list[BatchRead] | None:
    """Every read of the collector named ``collector`` in ``scope``: ``for x in collector``,
    ``for i, x in enumerate(collector)``, and ``next(it)`` / ``next(iter(collector))`` where
    ``it = iter(collector)`` (a loop over ``it`` counts as over the collector). None when there
    is none, more than one loop, a loop whose target is not a name (``for a, b in collector``),
    a ``next(it, default)`` (the default may not be a batch), or a use of the collector or its
    iterator that is none of these, a binding, ``len(...)`` or an attribute access
    (``train(collector)``, ``zip(steps, collector)``: batches read out of view)."""
    found = _Uses(rule, collector)
    visit_original(child_index(rule), scope, found)
    if found.handed_on():
        return None
    sources = found.iterators | {collector}
    reads: list[BatchRead] = []
    for loop in found.loops:
        batch = _loop_batch(rule, loop, sources)
        if batch is not None:
            reads.append(BatchRead(loop, batch))
        elif _over(rule, loop.iter, sources):
            return None
    for call in found.nexts:
        if not call.args or not _over(rule, call.args[0].value, found.iterators, collector):
            continue
        if len(call.args) != 1:
            return None
        reads.append(_next_read(rule, call))
    if not reads or sum(read.loop for read in reads) > 1:
        return None
    return reads


def _over(rule: Rule, value: cst.BaseExpression, sources: set[str], collector: str | None = None) -> bool:
    """``value`` is one of ``sources``, ``enumerate(<source>)``, or ``iter(collector)``."""
    if dotted(value) in sources:
        return True
    if not (isinstance(value, cst.Call) and len(value.args) >= 1):
        return False
    if rule.matches(value.func, "builtins.enumerate"):
        return dotted(value.args[0].value) in sources
    return collector is not None and rule.matches(value.func, "builtins.iter") and dotted(value.args[0].value) == collector


class _Uses(cst.CSTVisitor):
    """Loops, ``it = iter(collector)`` names and ``next(...)`` calls of a scope."""

    def __init__(self, rule: Rule, collector: str) -> None:
        self.rule, self.collector = rule, collector
        self.loops: list[cst.For] = []
        self.iterators: set[str] = set()
        self.nexts: list[cst.Call] = []
        self.names: list[cst.Name | cst.Attribute] = []

    def visit_For(self, node: cst.For) -> None:
        self.loops.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if (len(node.targets) == 1 and isinstance(value, cst.Call) and self.rule.matches(value.func, "builtins.iter")
                and len(value.args) == 1 and dotted(value.args[0].value) == self.collector):
            name = dotted(node.targets[0].target)
            if name is not None:
                self.iterators.add(name)

    def visit_Call(self, node: cst.Call) -> None:
        if self.rule.matches(node.func, "builtins.next"):
            self.nexts.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.names.append(node)

    def handed_on(self) -> bool:
        """Whether the collector or an iterator of it is used other than as a read, a binding,
        ``len(...)`` or an attribute access (``train(collector)``, ``zip(range(n), collector)``):
        batches read there are out of view."""
        sources = self.iterators | {self.collector}
        return any(dotted(node) in sources and _reference(self.rule, node) and not _known_use(self.rule, node)
                   for node in self.names)


def _reference(rule: Rule, node: cst.Name | cst.Attribute) -> bool:
    """``node`` reads or binds a value (not an attribute's name, a keyword, a parameter or a def's name)."""
    parent = rule.parent(node)
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is node:
        return False
    return not isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName))


def _known_use(rule: Rule, node: cst.Name | cst.Attribute) -> bool:
    parent = rule.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        return True  # collector.shutdown(), collector.update_policy_weights_()
    if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.For) and parent.iter is node):
        return True
    call = rule.parent(parent) if isinstance(parent, cst.Arg) else None
    if not (isinstance(call, cst.Call) and call.args and call.args[0] is parent):
        return False
    holder = rule.parent(call)
    if rule.matches(call.func, "builtins.len", "builtins.next"):
        return True
    if rule.matches(call.func, "builtins.enumerate"):
        return isinstance(holder, cst.For) and holder.iter is call
    if rule.matches(call.func, "builtins.iter"):  # it = iter(collector), next(iter(collector))
        outer = rule.parent(holder) if isinstance(holder, cst.Arg) else None
        return isinstance(holder, cst.Assign) or (isinstance(outer, cst.Call) and rule.matches(outer.func, "builtins.next"))
    return False


def _loop_batch(rule: Rule, loop: cst.For, sources: set[str]) -> str | None:
    it, target = loop.iter, loop.target
    if dotted(it) in sources and isinstance(target, (cst.Name, cst.Attribute)):
        return dotted(target)
    if (isinstance(it, cst.Call) and rule.matches(it.func, "builtins.enumerate") and it.args
            and dotted(it.args[0].value) in sources and isinstance(target, cst.Tuple)
            and len(target.elements) == 2 and isinstance(target.elements[1].value, cst.Name)):
        return dotted(target.elements[1].value)
    return None


def _next_read(rule: Rule, call: cst.Call) -> BatchRead:
    """``x = next(it)`` as a statement of its own: the statement and ``x``; any other ``next(it)``:
    the call, with its statement where that is a line of a block (a sync can go before it)."""
    assign = rule.parent(call)
    line = rule.statement_of(call)
    in_block = isinstance(line, cst.SimpleStatementLine) and isinstance(rule.parent(line), (cst.IndentedBlock, cst.Module))
    statement = line if in_block and isinstance(line, cst.SimpleStatementLine) else None
    if (statement is not None and len(statement.body) == 1 and isinstance(assign, cst.Assign)
            and assign.value is call and len(assign.targets) == 1):
        batch = dotted(assign.targets[0].target)
        if batch is not None:
            return BatchRead(statement, batch)
    return BatchRead(statement, None, call)


def continues(rule: Rule, loop: cst.For) -> bool:
    """Whether the body of ``loop`` holds a ``continue`` of that loop (it skips the body's end)."""
    found: list[cst.Continue] = []

    class Continues(cst.CSTVisitor):
        def visit_Continue(self, node: cst.Continue) -> None:
            found.append(node)

        def visit_For(self, node: cst.For) -> bool:
            return False  # an inner loop's own continue

        def visit_While(self, node: cst.While) -> bool:
            return False

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    visit_original(child_index(rule), loop.body, Continues())
    return bool(found)


@dataclass(frozen=True)
class PolicySyncs(FileAnalysis):
    """Whether the file calls ``<x>.update_policy_weights_(...)`` (a call in the tree: a comment or
    docstring naming it is not one)."""

    found: bool

    @classmethod
    def compute(cls, rule: Rule) -> PolicySyncs:
        return cls(any(isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                       and node.func.attr.value == "update_policy_weights_"
                       for node in child_index(rule).preorder))


def fills_buffer(call: cst.Call) -> bool:
    """The collector is given a ``replay_buffer=``: its iterator yields nothing to the script
    (torchrl/collectors/_single.py:1846-1853 extends the buffer and yields None;
    _multi_sync.py:319-320 likewise)."""
    arg = keyword(call, "replay_buffer")
    return arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "None")


# torchrl's parameterless policy class (torchrl/modules/tensordict_module/exploration.py:771, not an
# nn.Module): a collector makes no copy of it, and update_policy_weights_() raises for it.
RANDOM_POLICIES = frozenset({
    "torchrl.modules.RandomPolicy",
    "torchrl.collectors.RandomPolicy",
    "torchrl.modules.tensordict_module.exploration.RandomPolicy",
    "torchrl.envs.utils.RandomPolicy",
})


def copies_policy(rule: Rule, call: cst.Call) -> bool:
    """Whether the collector is handed a policy module it can copy: a ``policy`` argument that is
    not ``None``, a lambda, a function of the file or a ``RandomPolicy(...)``, and no
    ``policy_factory=`` (a factory builds the policy in the worker; with no policy torchrl uses a
    RandomPolicy)."""
    factory = keyword(call, "policy_factory")
    if factory is not None and not (isinstance(factory.value, cst.Name) and factory.value.value == "None"):
        return False
    arg = keyword(call, "policy") or positional(call, 1)
    if arg is None:
        return False
    value = arg.value
    if isinstance(value, cst.Name) and value.value == "None":
        return False
    values = name_bindings(rule, value) if isinstance(value, cst.Name) else [value]
    return not values or not all(_no_weights(rule, v) for v in values)


def _no_weights(rule: Rule, value: cst.CSTNode | None) -> bool:
    if isinstance(value, (cst.Lambda, cst.FunctionDef)):
        return True
    return isinstance(value, cst.Call) and not rule.qualified(value.func).isdisjoint(RANDOM_POLICIES)


def sole_binding(rule: Rule, target: cst.BaseExpression, call: cst.Call) -> bool:
    """Whether the name ``target`` (``collector = <call>``) holds that collector wherever its scope
    reads it: no other binding but ``None`` (``c = iter(c)`` or another collector class in a
    branch would make ``c.update_policy_weights_()`` another object's call). An attribute target
    (``self.collector``) counts as sole."""
    if not isinstance(target, cst.Name):
        return isinstance(target, cst.Attribute)
    values = name_bindings(rule, target)
    if values is None:
        return False
    return all(value is call or (isinstance(value, cst.Name) and value.value == "None") for value in values)


def bound_to_cpu(rule: Rule, value: cst.BaseExpression) -> bool:
    """``value`` is a name every binding of which, in the scope it resolves to, is the CPU
    (``x = "cpu"``, ``x = torch.device("cpu")``): it can never hold a neuron device."""
    if not isinstance(value, cst.Name):
        return False
    values = name_bindings(rule, value)
    if not values:
        return False
    return all(isinstance(v, cst.BaseExpression) and _is_cpu(rule, v) for v in values)


def _is_cpu(rule: Rule, value: cst.BaseExpression) -> bool:
    return _cpu_literal(value, lambda func: rule.matches(func, "torch.device"))


def never_accelerator(rule: Rule, value: cst.BaseExpression) -> bool:
    """``value`` is the CPU (a literal, ``torch.device("cpu")``, a name bound only to those), ``None``,
    or another string than a ``cuda``/``neuron`` one (``"auto"``, ``"meta"``)."""
    if bound_to_cpu(rule, value) or _is_cpu(rule, value) or (isinstance(value, cst.Name) and value.value == "None"):
        return True
    text = string_value(value)
    return text is not None and not (text.startswith("cuda") or text.startswith("neuron"))


# torchrl distributions that take bounds (``low``/``high``) and move them to their parameters' device
# themselves (torchrl 0.14.1 modules/distributions/continuous.py:436-460, TanhNormal; :790-800, TanhDelta).
BOUNDED_DISTRIBUTIONS = ("TanhNormal", "TanhDelta")
_BOUND_KEYS = ("low", "high")


def device_bounds(rule: Rule, call: cst.Call) -> tuple[str, str] | None:
    """(where, the bound's code) when the policy handed to the collector ``call`` comes from a
    function that builds distribution bounds on a device: ``policy = make_models(...)`` or
    ``policy, critic = make_models(...)`` (the name's only binding; no argument of that call a CPU
    literal), ``make_models`` a ``def`` of this file or of a project module it imports, and in it, or
    in a function of its module it calls by name, a ``"low"``/``"high"`` dict entry whose value is
    ``x.to(d)`` or a call given ``device=d`` (``d`` not a CPU literal nor a ``torch`` dtype), in a
    function whose code names a bounded torchrl distribution (``TanhNormal``, ``TanhDelta``)."""
    arg = keyword(call, "policy") or positional(call, 1)
    if arg is None or not isinstance(arg.value, cst.Name):
        return None
    maker = _made_by(rule, arg.value)
    if maker is None or any(_cpu_literal(a.value) for a in maker.args):
        return None
    found = project_function(rule, maker.func)
    if found is None:
        return None
    tree, function = found
    module = tree if tree is not None else rule.context.module
    index = child_index(rule)  # walks a node of another module's tree through its children
    functions = [function]
    for node in index.walk(function):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            callee = top_level(module, node.func.value)
            if isinstance(callee, cst.FunctionDef) and callee not in functions:
                functions.append(callee)
    for each in functions:
        nodes = list(index.walk(each))
        if not any(isinstance(node, cst.Name) and node.value in BOUNDED_DISTRIBUTIONS for node in nodes):
            continue
        for node in nodes:
            if isinstance(node, cst.DictElement) and string_value(node.key) in _BOUND_KEYS and _on_device(node.value):
                code = module.code_for_node(node.value).strip()
                owners = {name.rpartition(".")[0].lstrip(".") for name in rule.qualified(maker.func)} if tree is not None else set()
                owner = f"{owners.pop()}." if len(owners) == 1 else ""
                return f"{owner}{each.name.value}()", code
    return None


def _made_by(rule: Rule, name: cst.Name) -> cst.Call | None:
    """The call whose result binds ``name`` (or a name of its tuple target), when that is its only binding."""
    scope = rule.get_metadata(ScopeProvider, name, None)
    if scope is None or name.value not in scope:
        return None
    assignments = list(scope[name.value])
    if len(assignments) != 1:
        return None
    node = getattr(assignments[0], "node", None)
    holder = rule.parent(node) if node is not None else None
    while isinstance(holder, (cst.Element, cst.Tuple, cst.List)):
        holder = rule.parent(holder)
    assign = rule.parent(holder) if isinstance(holder, cst.AssignTarget) else None
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.value, cst.Call):
        return assign.value
    return None


def _on_device(value: cst.BaseExpression) -> bool:
    """``x.to(d)`` or a call given ``device=d``, ``d`` not a CPU literal nor a ``torch`` dtype."""
    if not isinstance(value, cst.Call):
        return False
    target = keyword(value, "device")
    if target is None and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to":
        target = positional(value, 0)
    if target is None:
        return False
    where = target.value
    dtype = isinstance(where, cst.Attribute) and dotted(where.value) == "torch" and where.attr.value != "device"
    return not (dtype or _cpu_literal(where))


def _device_spelled(func: cst.BaseExpression) -> bool:
    return (dotted(func) or "").endswith("device")


def _cpu_literal(value: cst.BaseExpression, is_device: Callable[[cst.BaseExpression], bool] = _device_spelled) -> bool:
    """``"cpu"`` / ``"cpu:0"``, or ``torch.device("cpu")`` (``type="cpu"``) where ``is_device`` says the
    callee is ``torch.device``: by its qualified name in this file, by its spelling in another module."""
    text = string_value(value)
    if text is None and isinstance(value, cst.Call) and is_device(value.func) and len(value.args) == 1:
        text = string_value(value.args[0].value)
    return text is not None and (text == "cpu" or text.startswith("cpu:"))
