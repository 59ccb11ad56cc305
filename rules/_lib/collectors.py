"""torchrl collectors as a script uses them: where it reads their batches, whether it syncs their
policy, what a device name is bound to. No rule lives here (NRN116 uses it)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
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
# Their qualified names (torchrl.modules re-exports them from .distributions, itself from .continuous).
BOUNDED = tuple(f"{module}.{name}" for name in BOUNDED_DISTRIBUTIONS
                for module in ("torchrl.modules", "torchrl.modules.distributions", "torchrl.modules.distributions.continuous"))
# The modules that build a distribution from distribution_class(**params, **distribution_kwargs) and read
# the kwargs for nothing else (tensordict 0.15.3 nn/probabilistic.py, ProbabilisticTensorDictModule; torchrl
# 0.14.1's ProbabilisticActor and SafeProbabilisticModule subclass it).
DISTRIBUTION_MODULES = (
    "torchrl.modules.ProbabilisticActor", "torchrl.modules.tensordict_module.ProbabilisticActor",
    "torchrl.modules.tensordict_module.actors.ProbabilisticActor",
    "torchrl.modules.SafeProbabilisticModule", "torchrl.modules.tensordict_module.SafeProbabilisticModule",
    "torchrl.modules.tensordict_module.probabilistic.SafeProbabilisticModule",
    "tensordict.nn.ProbabilisticTensorDictModule", "tensordict.nn.probabilistic.ProbabilisticTensorDictModule",
)
_BOUND_KEYS = ("low", "high")
TENSOR_MAKERS = ("torch.as_tensor", "torch.tensor")
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass(frozen=True)
class HostBound:
    """A ``"low"``/``"high"`` entry the port puts on the host, and the value it then holds."""

    entry: cst.DictElement
    host: cst.BaseExpression


@dataclass(frozen=True)
class Names:
    """What a rule knows a callee or class expression holds: ``bounded`` (a BOUNDED distribution),
    ``module`` (a DISTRIBUTION_MODULES callee), ``maker`` (``torch.as_tensor``/``torch.tensor``)."""

    bounded: Callable[[cst.BaseExpression], bool]
    module: Callable[[cst.BaseExpression], bool]
    maker: Callable[[cst.BaseExpression], bool]


def qualified_names(rule: Rule) -> Names:
    """``Names`` for the file a rule ports: every qualified name libcst gives the expression is in
    the table (a name an ``if`` binds to torchrl's class in one branch and to another in the other is not)."""
    def every(table: Collection[str]) -> Callable[[cst.BaseExpression], bool]:
        def holds(value: cst.BaseExpression) -> bool:
            names = rule.qualified(value)
            return bool(names) and all(name in table for name in names)
        return holds
    return Names(every(BOUNDED), every(DISTRIBUTION_MODULES), every(TENSOR_MAKERS))


def spelled_names(module: cst.Module, walk: Callable[[cst.CSTNode], Iterable[cst.CSTNode]]) -> Names:
    """``Names`` for a module read without metadata (another file of the project): a name its
    ``from torchrl.modules import TanhNormal [as N]`` (anywhere in it) binds, or a dotted full name."""
    bound: dict[str, str] = {}
    for node in walk(module):
        if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative and isinstance(node.names, (list, tuple)):
            for alias in node.names:
                local = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(local, cst.Name):
                    bound[local.value] = f"{dotted(node.module)}.{dotted(alias.name)}"

    def spelled(table: Collection[str]) -> Callable[[cst.BaseExpression], bool]:
        def holds(value: cst.BaseExpression) -> bool:
            name = bound.get(value.value) if isinstance(value, cst.Name) else dotted(value)
            return name in table
        return holds
    return Names(spelled(BOUNDED), spelled(DISTRIBUTION_MODULES), lambda func: dotted(func) in TENSOR_MAKERS)


def host_bounds(call: cst.Call, scope: cst.CSTNode, walk: Callable[[cst.CSTNode], Iterable[cst.CSTNode]],
                names: Names) -> list[HostBound]:
    """The bounds ``call`` (``ProbabilisticActor(..., distribution_class=C, distribution_kwargs=K)``,
    a DISTRIBUTION_MODULES callee) hands a bounded distribution, moved to a device, that can stay
    where they are. ``scope``: the function (or module) holding ``call``, not in a nested one.

    ``C`` is a name the scope does not assign that ``names.bounded`` accepts (``TanhNormal``), or a
    name the scope binds once to one (``dist_class = TanhNormal``); ``K`` a dict display, or a name
    bound once to one and read only here (the name appears twice in the scope, nested functions
    included: its assignment and this keyword). An entry ``"low"``/``"high"`` whose value is
    ``x.to(d)`` (that one argument) becomes ``x.cpu()`` (the spec may be on the device: a proof env
    built there); ``torch.as_tensor(x, device=d)`` / ``torch.tensor(...)`` gets ``device="cpu"``. ``d`` is a variable (for ``.to(d)``, one spelled as a
    device, ``_device_variable``; ``.to(x)`` takes a dtype or a tensor too); a ``"cuda"`` literal is
    an explicit choice, left to the device rules. Every bound of the dict must be such a value or a
    number: one left where it is may be on the device, and TanhNormal compares ``high > low``
    before it moves them. The distribution moves the bounds to its parameters' device itself, so
    its numbers do not change."""
    klass, table = keyword(call, "distribution_class"), keyword(call, "distribution_kwargs")
    if klass is None or table is None or not names.module(call.func):
        return []
    nodes = list(walk(scope))
    inner = {id(n) for nested in nodes if nested is not scope and isinstance(nested, _SCOPES) for n in walk(nested)}
    if id(call) in inner:
        return []
    counts = name_counts(nodes)
    values = {node.targets[0].target.value: node.value for node in nodes
              if isinstance(node, cst.Assign) and id(node) not in inner and len(node.targets) == 1
              and isinstance(node.targets[0].target, cst.Name)}

    def held(value: cst.BaseExpression) -> cst.BaseExpression | None:
        if not isinstance(value, cst.Name) or value.value not in values:
            return value  # a name the scope does not assign: ``names.bounded`` says what it holds
        return values[value.value] if counts.get(value.value) == 2 else None

    kind, kwargs = held(klass.value), held(table.value)
    if kind is None or not names.bounded(kind) or not isinstance(kwargs, cst.Dict):
        return []
    found = []
    for entry in kwargs.elements:
        if not isinstance(entry, cst.DictElement) or string_value(entry.key) not in _BOUND_KEYS:
            continue
        host = _host_value(entry.value, names.maker)
        if host is not None:
            found.append(HostBound(entry, host))
        elif not _number(entry.value):
            return []  # a bound left where it is may be on the device: the other on the host would not compare with it
    return found


def name_counts(nodes: Iterable[cst.CSTNode]) -> dict[str, int]:
    """How often each name appears among ``nodes`` as a variable (read or bound), not as a keyword's
    label (``f(x=1)``) or an attribute's name (``a.x``)."""
    nodes = list(nodes)
    labels = {id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword is not None}
    labels |= {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)}
    counts: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, cst.Name) and id(node) not in labels:
            counts[node.value] = counts.get(node.value, 0) + 1
    return counts


def _number(value: cst.BaseExpression) -> bool:
    while isinstance(value, cst.UnaryOperation) and isinstance(value.operator, (cst.Minus, cst.Plus)):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.Float))


def _host_value(value: cst.BaseExpression, maker: Callable[[cst.BaseExpression], bool]) -> cst.BaseExpression | None:
    """``x.to(d)`` → ``x.cpu()``; ``torch.as_tensor(x, device=d)`` → ``torch.as_tensor(x, device="cpu")``."""
    if not isinstance(value, cst.Call):
        return None
    if isinstance(value.func, cst.Attribute) and value.func.attr.value == "to":
        if len(value.args) == 1 and value.args[0].keyword is None and value.args[0].star == "" and _device_variable(value.args[0].value):
            return value.with_changes(func=value.func.with_changes(attr=cst.Name("cpu")), args=())
        return None
    device = keyword(value, "device")
    if device is None or not maker(value.func) or not (isinstance(device.value, (cst.Name, cst.Attribute, cst.Subscript))
                                                       and dotted(device.value) != "None"):
        return None  # device= says it is a device: any variable
    return value.with_changes(args=[a.with_changes(value=cst.SimpleString('"cpu"')) if a is device else a for a in value.args])


def _device_variable(value: cst.BaseExpression) -> bool:
    """A device held by a variable, by its spelling: a name ``dev`` or ``*device``, an attribute
    ``*.device``/``*._device``, a subscript ``x["device"]``. ``.to(x)`` also takes a dtype or a tensor
    (whose dtype it would take too): a name spelled otherwise is not read as a device."""
    if isinstance(value, cst.Subscript):
        keys = [string_value(e.slice.value) for e in value.slice if isinstance(e.slice, cst.Index)]
        text = keys[0] if len(keys) == 1 else None
    else:
        text = value.attr.value if isinstance(value, cst.Attribute) else value.value if isinstance(value, cst.Name) else None
    return text is not None and (text.lower().endswith("device") or text == "dev")


def device_bounds(rule: Rule, call: cst.Call) -> tuple[str, str, bool] | None:
    """(where, the bound's code, whether the port of its module keeps it on the host) when the policy
    handed to the collector ``call`` comes from a
    function that builds distribution bounds on a device: ``policy = make_models(...)`` or
    ``policy, critic = make_models(...)`` (the name's only binding; no argument of that call a CPU
    literal), ``make_models`` a ``def`` of this file or of a project module it imports, and in it, or
    in a function of its module it calls by name, a ``"low"``/``"high"`` dict entry whose value is
    ``x.to(d)`` or a call given ``device=d`` (``d`` not a CPU literal nor a ``torch`` dtype), in a
    function whose code names a bounded torchrl distribution (``TanhNormal``, ``TanhDelta``). The
    entries ``host_bounds`` finds there are the ones NRN116 keeps on the host where it ports that
    module (by qualified name in this file, where they are then not reported; in another, by the
    names its imports bind, ``spelled_names``)."""
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
    names = qualified_names(rule) if tree is None else spelled_names(tree, index.walk)
    functions = [function]
    for node in index.walk(function):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
            callee = top_level(module, node.func.value)
            if isinstance(callee, cst.FunctionDef) and callee not in functions:
                functions.append(callee)
    owners = {name.rpartition(".")[0].lstrip(".") for name in rule.qualified(maker.func)} if tree is not None else set()
    owner = f"{owners.pop()}." if len(owners) == 1 else ""
    first: tuple[str, str, bool] | None = None
    for each in functions:
        nodes = list(index.walk(each))
        if not any(isinstance(node, cst.Name) and node.value in BOUNDED_DISTRIBUTIONS for node in nodes):
            continue
        kept = {id(bound.entry) for scope in nodes if isinstance(scope, (cst.FunctionDef, cst.Module))
                for node in index.walk(scope) if isinstance(node, cst.Call)
                for bound in host_bounds(node, scope, index.walk, names)}  # each call in its own def's scope
        for node in nodes:
            if isinstance(node, cst.DictElement) and string_value(node.key) in _BOUND_KEYS and _on_device(node.value):
                found_here = f"{owner}{each.name.value}()", module.code_for_node(node.value).strip(), id(node) in kept
                if found_here[2] and tree is None:
                    continue  # this file's port keeps it on the host
                if not found_here[2]:
                    return found_here  # a bound the port leaves on the device comes first
                first = first or found_here
    return first


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
