"""Step-loop analysis shared by the host-sync rules (NRN6xx). No rule lives here.

One analysis per file (cached in ``FileContext.notes``) finds the step loops, their step counter
and logging interval, and sorts every host synchronisation on the per-step path into what the
rules do with it: an accumulation to keep on the device, a list append, a logging statement to
move under the interval, a control-flow use to mark, a per-step ``synchronize()`` or a residual
sync to mark.

Heuristics (each rule's Safety section repeats the ones it relies on):

- A *step loop* is a ``for``/``while`` whose own body (outside nested loops and definitions)
  calls ``.backward()``, ``.zero_grad()``, an optimizer's ``.step()`` (receiver named like
  ``optimizer``/``opt``, or ``scaler.step(optimizer)``), or a function/method of this file whose
  body does so outside a loop. An *evaluation loop* iterates over something named like a loader
  inside ``torch.no_grad()``/``torch.inference_mode()`` or a function named like
  eval/validate/evaluate. A loop whose only steps are in nested loops (an epoch loop) is neither.
- A statement is *per-step* when a step loop of the same function encloses it and no enclosing
  ``if`` between them is an interval branch (its test uses ``%`` or ``==``) or a one-shot branch
  (its body ends in ``break``/``return``/``raise``/``sys.exit``).
- The step counter is the loop's ``enumerate`` index, else a name or attribute incremented by
  ``+= 1`` in the loop body. The interval is the one an existing ``if X % Y == 0`` in the loop
  uses, else a name spelled like a logging interval (``log_interval``, ``print_freq``,
  ``log_every``...) in the function or module, else a new module constant ``LOG_INTERVAL``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
import libcst as cst

from porter.engine.fastcst.walk import TreeIndex
from porter.rules._lib.nodes import dotted, method_name
from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.tree import child_index

CONSTANT = "LOG_INTERVAL"
INTERVAL_NAME = re.compile(
    r"^(log_interval|log_every|log_freq|log_frequency|log_steps|logging_steps|logging_interval|print_freq|"
    r"print_every|print_interval|disp_freq|display_interval|log_every_n_steps|LOG_INTERVAL|LOG_EVERY|PRINT_FREQ)$"
)
OPTIMIZER_NAME = re.compile(r"(?i)(^|_)(optimi[sz]er|optim|opt)s?(_|$)")
LOADER_NAME = re.compile(r"(?i)(loader|_dl$|^dl$|dataloader)")
EVAL_FUNCTION = re.compile(r"(?i)(eval|valid)")
TENSOR_NAME = re.compile(r"(?i)loss")
SYNC_METHODS = frozenset({"item", "tolist", "numpy"})
LOG_METHODS = frozenset(
    {"set_postfix", "set_postfix_str", "set_description", "write", "add_scalar", "add_scalars", "log", "info", "debug"}
)
LOG_FUNCTIONS = frozenset({"print", "pprint"})
# print_rank_0(...), rank0_print(...), log_metrics(...): helpers whose name says they print or log.
LOG_HELPER = re.compile(r"(?i)^(print_\w+|\w+_print|log_\w+|\w+_log)$")
# Where a call's "direct" body ends: loops and definitions (see _Analyzer._direct_calls).
_OWNERS = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)
EXIT_CALLS = frozenset({"sys.exit", "exit", "quit", "os._exit"})

# Site kinds.
ACCUMULATE = "accumulate"
APPEND = "append"
LOG = "log"
CONTROL = "control"
SYNCHRONIZE = "synchronize"
RESIDUAL = "residual"


@dataclass
class StepLoop:
    node: cst.For | cst.While
    kind: str  # "train" | "eval"
    function: cst.FunctionDef | None
    counter: str | None = None  # text of the step counter expression
    interval: str | None = None  # text of the interval expression
    needs_enumerate: bool = False  # a For with no counter: the logging rule adds enumerate()
    uses_constant: bool = False
    tensors: set[str] | None = None  # names known to hold tensors in the loop's function (lazy)


@dataclass
class Site:
    kind: str
    statement: cst.BaseStatement  # SimpleStatementLine or compound statement
    node: cst.CSTNode  # the small statement / expression the site is about
    loop: StepLoop
    syncs: list[cst.CSTNode] = field(default_factory=list)
    # ACCUMULATE / APPEND: the accumulator name and the reads to wrap (Name nodes / sum() calls)
    target: str | None = None
    wraps: list[tuple[cst.CSTNode, str]] = field(default_factory=list)
    note: str = ""


@dataclass
class HostSyncAnalysis(FileAnalysis):
    loops: list[StepLoop] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    constant_anchor: cst.BaseStatement | None = None  # insert LOG_INTERVAL after this statement
    constant_before: bool = False  # insert before the anchor instead
    needs_constant: bool = False

    def of_kind(self, *kinds: str) -> list[Site]:
        return [site for site in self.sites if site.kind in kinds]

    @classmethod
    def compute(cls, rule: Rule) -> HostSyncAnalysis:
        """The file's analysis (``rule.analysis(HostSyncAnalysis)`` shares it among the rules)."""
        global _active_index
        _active_index = child_index(rule)
        try:
            return _Analyzer(rule).run()
        finally:
            _active_index = None


# ----------------------------------------------------------------------------- tree utilities


# The file's TreeIndex while its analysis runs: ``node.children`` rebuilds the node on every call,
# which made the analysis cost several full traversals of a big file.
_active_index: TreeIndex | None = None


def iter_nodes(node: cst.CSTNode, *, into_scopes: bool = False):
    """Every node under ``node`` (pre-order), not entering nested defs/classes/lambdas unless asked."""
    children = _active_index.of if _active_index is not None else _children
    if into_scopes and _active_index is not None:
        yield from _active_index.walk(node)
        return
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and not into_scopes and isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(reversed(children(current)))


def _children(node: cst.CSTNode):
    return node.children


def is_interval_test(test: cst.BaseExpression) -> bool:
    for node in iter_nodes(test):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            return True
        if isinstance(node, cst.ComparisonTarget) and isinstance(node.operator, cst.Equal):
            return True
    return False


def _ends_loop_or_function(body: cst.BaseSuite, rule: Rule) -> bool:
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    if not statements:
        return False
    last = statements[-1]
    small = last.body if isinstance(last, cst.SimpleStatementLine) else (last.body if isinstance(last, cst.SimpleStatementSuite) else [])
    if not isinstance(small, (list, tuple)) or not small:
        return False
    final = small[-1]
    if isinstance(final, (cst.Break, cst.Return, cst.Raise)):
        return True
    if isinstance(final, cst.Expr) and isinstance(final.value, cst.Call):
        return dotted(final.value.func) in EXIT_CALLS or rule.matches(final.value.func, "sys.exit", "os._exit")
    return False


def sync_calls(node: cst.CSTNode, tensors: set[str]) -> list[cst.CSTNode]:
    """Host-synchronising calls under ``node``: ``.item()``, ``.tolist()``, ``.numpy()``, ``float(t)``."""
    found: list[cst.CSTNode] = []
    for current in iter_nodes(node):
        if not isinstance(current, cst.Call):
            continue
        name = method_name(current)
        if name in SYNC_METHODS and not current.args:
            found.append(current)
        elif isinstance(current.func, cst.Name) and current.func.value in {"float", "int", "bool"} and len(current.args) == 1:
            if is_tensorish(current.args[0].value, tensors):
                found.append(current)
    return found


def is_tensorish(node: cst.CSTNode, tensors: set[str]) -> bool:
    if isinstance(node, cst.Name):
        return node.value in tensors
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value in {"sum", "mean", "detach", "float", "max", "min", "norm"}:
            return is_tensorish(node.func.value, tensors) or isinstance(node.func.value, cst.Comparison)
    if isinstance(node, cst.BinaryOperation):
        return is_tensorish(node.left, tensors) or is_tensorish(node.right, tensors)
    return False


def formatted_tensors(node: cst.CSTNode, tensors: set[str]) -> list[cst.CSTNode]:
    """Tensors formatted as text: ``{loss}`` in an f-string, ``"%f" % loss``, ``print(loss)``."""
    found: list[cst.CSTNode] = []
    for current in iter_nodes(node):
        if isinstance(current, cst.FormattedStringExpression) and is_tensorish(current.expression, tensors):
            found.append(current.expression)
        elif isinstance(current, cst.BinaryOperation) and isinstance(current.operator, cst.Modulo):
            if isinstance(current.left, (cst.SimpleString, cst.ConcatenatedString)):
                right = current.right
                items = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
                found.extend(item for item in items if is_tensorish(item, tensors))
        elif isinstance(current, cst.Call) and dotted(current.func) == "print":
            found.extend(arg.value for arg in current.args if is_tensorish(arg.value, tensors))
    return found


# ----------------------------------------------------------------------------- the analysis


class _Analyzer:
    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.module = rule.context.module
        self.parents = child_index(rule).parents
        self.result = HostSyncAnalysis()
        self.step_functions: set[str] = set()
        self.followed: set[int] = set()
        self.direct_calls: dict[cst.CSTNode, list[cst.Call]] | None = None
        self.argparse_interval: list[str | None] = []  # cached _argparse_interval()
        # Functions of this file by name, and methods by (class, name): calls the loops may follow.
        self.functions: dict[str, cst.FunctionDef] = {
            s.name.value: s for s in self.module.body if isinstance(s, cst.FunctionDef)
        }
        self.methods: dict[tuple[str, str], cst.FunctionDef] = {}
        self.index = child_index(rule)
        for node in self.index.find(self.module, cst.ClassDef):
            if isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
                for item in node.body.body:
                    if isinstance(item, cst.FunctionDef):
                        self.methods[(node.name.value, item.name.value)] = item

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        current = self.parent(node)
        while current is not None:
            if isinstance(current, cst.FunctionDef):
                return current
            current = self.parent(current)
        return None

    def run(self) -> Analysis:
        self._find_step_functions()
        self._find_constant_anchor()
        loops = self.index.find(self.module, cst.For, cst.While)
        by_node: dict[int, StepLoop] = {}
        for loop in loops:
            kind = self._loop_kind(loop)
            if kind is not None:
                step_loop = StepLoop(loop, kind, self.function_of(loop))
                self._find_counter(step_loop)
                by_node[id(loop)] = step_loop
                self.result.loops.append(step_loop)
        for step_loop in self.result.loops:
            # Only the outermost step loop of a nest collects sites; nested loops are visited within.
            if any(id(a) in by_node for a in self._loop_ancestors(step_loop.node)):
                continue
            self._collect(step_loop.node.body, step_loop, by_node)
        self._classify_accumulators()
        return self.result

    # -- step loop detection -------------------------------------------------
    def _direct_signal(self, body: cst.CSTNode) -> bool:
        """A call in ``body`` (not in a nested loop or definition) that is a step signal."""
        return any(self._signal_call(call) for call in self._direct_calls().get(body, ()))

    def _direct_calls(self) -> dict[cst.CSTNode, list[cst.Call]]:
        """Every call of the file under the body of its nearest loop/def/lambda, keyed by that body.

        One upward walk per call replaces walking every loop and function body (nested loops
        were walked once per enclosing loop).
        """
        if self.direct_calls is None:
            self.direct_calls = {}
            for call in self.index.find(self.module, cst.Call):
                child, current = call, self.parent(call)
                while current is not None and not isinstance(current, _OWNERS):
                    child, current = current, self.parent(current)
                if current is not None and child is getattr(current, "body", None):
                    self.direct_calls.setdefault(child, []).append(call)  # type: ignore[arg-type]
        return self.direct_calls

    def _inside_nested_loop(self, node: cst.CSTNode, body: cst.CSTNode) -> bool:
        current = self.parent(node)
        while current is not None and current is not body:
            if isinstance(current, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return True
            current = self.parent(current)
        return False

    def _signal_call(self, call: cst.Call) -> bool:
        name = method_name(call)
        if name in {"backward", "zero_grad"}:
            return True
        if name == "step" and isinstance(call.func, cst.Attribute):
            receiver = dotted(call.func.value) or ""
            if OPTIMIZER_NAME.search(receiver.split(".")[-1]):
                return True
            return any(OPTIMIZER_NAME.search((dotted(arg.value) or "").split(".")[-1]) for arg in call.args)
        callee = dotted(call.func) or ""
        last = callee.split(".")[-1]
        if callee and (callee in self.step_functions or (callee.startswith("self.") and last in self.step_functions)):
            return True
        return False

    def _find_step_functions(self) -> None:
        for node in self.index.find(self.module, cst.FunctionDef):
            if isinstance(node, cst.FunctionDef) and self._direct_signal_no_loops(node.body):
                self.step_functions.add(node.name.value)

    def _direct_signal_no_loops(self, body: cst.CSTNode) -> bool:
        for node in self._direct_calls().get(body, ()):
            if method_name(node) in {"backward", "zero_grad", "step"}:
                if method_name(node) == "step" and not self._signal_call(node):
                    continue
                return True
        return False

    def _loop_kind(self, loop: cst.For | cst.While) -> str | None:
        if self._direct_signal(loop.body):
            return "train"
        if isinstance(loop, cst.For) and self._is_eval_loop(loop):
            return "eval"
        return None

    def _is_eval_loop(self, loop: cst.For) -> bool:
        text = self.module.code_for_node(loop.iter)
        if not LOADER_NAME.search(text):
            return False
        if EVAL_FUNCTION.search(text) or self._no_grad_inside(loop.body):
            return True
        function = self.function_of(loop)
        if function is not None:
            if EVAL_FUNCTION.search(function.name.value):
                return True
            for decorator in function.decorators:
                target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
                if self.rule.matches(target, "torch.no_grad", "torch.inference_mode"):
                    return True
        current = self.parent(loop)
        while current is not None and not isinstance(current, cst.FunctionDef):
            if isinstance(current, cst.With):
                for item in current.items:
                    target = item.item.func if isinstance(item.item, cst.Call) else item.item
                    if self.rule.matches(target, "torch.no_grad", "torch.inference_mode"):
                        return True
            current = self.parent(current)
        return False

    def _no_grad_inside(self, body: cst.CSTNode) -> bool:
        for node in iter_nodes(body):
            if isinstance(node, cst.With):
                for item in node.items:
                    target = item.item.func if isinstance(item.item, cst.Call) else item.item
                    if self.rule.matches(target, "torch.no_grad", "torch.inference_mode"):
                        return True
        return False

    def _loop_ancestors(self, node: cst.CSTNode):
        current = self.parent(node)
        while current is not None and not isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            if isinstance(current, (cst.For, cst.While)):
                yield current
            current = self.parent(current)

    # -- counter and interval --------------------------------------------------
    def _find_counter(self, step_loop: StepLoop) -> None:
        loop = step_loop.node
        for node in iter_nodes(loop.body):
            if isinstance(node, cst.If) and not self._inside_nested_loop(node, loop.body):
                pair = _modulo_pair(node.test, self.module)
                if pair is not None:
                    step_loop.counter, step_loop.interval = pair
                    return
        if isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and dotted(loop.iter.func) == "enumerate":
            if isinstance(loop.target, cst.Tuple) and loop.target.elements:
                first = loop.target.elements[0].value
                if isinstance(first, cst.Name):
                    step_loop.counter = first.value
        if step_loop.counter is None:
            for node in iter_nodes(loop.body):
                if (
                    isinstance(node, cst.AugAssign)
                    and isinstance(node.operator, cst.AddAssign)
                    and isinstance(node.value, cst.Integer)
                    and node.value.value == "1"
                    and not self._inside_nested_loop(node, loop.body)
                ):
                    text = dotted(node.target)
                    if text:
                        step_loop.counter = text
                        break
        if step_loop.counter is None and isinstance(loop, cst.For):
            step_loop.counter = self._free_name(step_loop.function, ("step", "log_step", "porter_step"))
            step_loop.needs_enumerate = step_loop.counter is not None
        step_loop.interval = self._interval_name(step_loop.function)
        if step_loop.interval is None:
            step_loop.interval = CONSTANT
            step_loop.uses_constant = True

    def _free_name(self, function: cst.FunctionDef | None, candidates: tuple[str, ...]) -> str | None:
        scope = function if function is not None else self.module
        used = {
            n.value
            for n in iter_nodes(scope, into_scopes=True)
            if isinstance(n, cst.Name)
            and not (isinstance(self.parent(n), cst.Attribute) and self.parent(n).attr is n)  # type: ignore[union-attr]
        }
        return next((name for name in candidates if name not in used), None)

    def _interval_name(self, function: cst.FunctionDef | None) -> str | None:
        scopes: list[cst.CSTNode] = []
        if function is not None:
            scopes.append(function)
        for scope in scopes:
            for node in iter_nodes(scope, into_scopes=True):
                if isinstance(node, cst.Name) and INTERVAL_NAME.match(node.value):
                    parent = self.parent(node)
                    if isinstance(parent, cst.Attribute) and parent.attr is node:
                        text = dotted(parent)
                        if text and text.split(".")[0] in {"args", "self", "cfg", "config", "opt", "opts", "FLAGS", "hparams"}:
                            return text
                        continue
                    if isinstance(parent, (cst.Arg, cst.Call)) and getattr(parent, "keyword", None) is node:
                        continue
                    return node.value
        option = self._argparse_interval()
        if option is not None and function is not None:
            holders = {p.name.value for p in function.params.params} | {
                n.value for n in iter_nodes(function) if isinstance(n, cst.Name)
            }
            for holder in ("args", "opt", "opts", "cfg", "config", "hparams"):
                if holder in holders:
                    return f"{holder}.{option}"
        for statement in self.module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign):
                        for target in small.targets:
                            if isinstance(target.target, cst.Name) and INTERVAL_NAME.match(target.target.value):
                                return target.target.value
        return None

    def _argparse_interval(self) -> str | None:
        """``parser.add_argument("--log-interval", ...)`` in this file -> ``log_interval`` (its dest)."""
        if not self.argparse_interval:
            self.argparse_interval.append(self._find_argparse_interval())
        return self.argparse_interval[0]

    def _find_argparse_interval(self) -> str | None:
        for node in self.index.find(self.module, cst.Call):
            if not isinstance(node, cst.Call) or method_name(node) != "add_argument":
                continue
            flags = [a.value.evaluated_value for a in node.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
            for flag in flags:
                if isinstance(flag, str) and flag.startswith("--"):
                    dest = flag[2:].replace("-", "_")
                    if INTERVAL_NAME.match(dest):
                        for arg in node.args:
                            if arg.keyword is not None and arg.keyword.value == "dest" and isinstance(arg.value, cst.SimpleString):
                                value = arg.value.evaluated_value
                                return value if isinstance(value, str) else dest
                        return dest
        return None

    def _find_constant_anchor(self) -> None:
        last_import: cst.BaseStatement | None = None
        for statement in self.module.body:
            if isinstance(statement, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
            ):
                last_import = statement
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef, cst.For, cst.While, cst.With)):
                break  # the constant must exist before any code that may run a step loop
        if last_import is not None:
            self.result.constant_anchor = last_import
        elif self.module.body:
            first = self.module.body[0]
            docstring = isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr) and isinstance(
                first.body[0].value, (cst.SimpleString, cst.ConcatenatedString)
            )
            if docstring and len(self.module.body) > 1:
                self.result.constant_anchor = first
            else:
                self.result.constant_anchor = first
                self.result.constant_before = not docstring

    # -- per-step sites ------------------------------------------------------------------
    def _collect(self, body: cst.BaseSuite, step_loop: StepLoop, by_node: dict[int, StepLoop]) -> None:
        statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
        for statement in statements:
            self._collect_statement(statement, step_loop, by_node)

    def _collect_statement(self, statement: cst.CSTNode, step_loop: StepLoop, by_node: dict[int, StepLoop]) -> None:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            line = statement if isinstance(statement, cst.SimpleStatementLine) else None
            for small in statement.body:
                self._classify(small, line, step_loop)
            moved = any(site.statement is statement and site.kind in {LOG, SYNCHRONIZE} for site in self.result.sites)
            if not moved:  # a logging helper moved under the interval no longer runs every step
                self._follow_calls(statement, step_loop)
            return
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return
        if isinstance(statement, cst.If):
            self._classify_test(statement.test, statement, step_loop)
            # The body of an interval branch (`if step % N == 0`) or a one-shot branch is not per-step.
            if not is_interval_test(statement.test) and not _ends_loop_or_function(statement.body, self.rule):
                self._collect(statement.body, step_loop, by_node)
            orelse = statement.orelse
            if isinstance(orelse, cst.If):
                self._collect_statement(orelse, step_loop, by_node)
            elif isinstance(orelse, cst.Else) and not _ends_loop_or_function(orelse.body, self.rule):
                self._collect(orelse.body, step_loop, by_node)
            return
        if isinstance(statement, (cst.For, cst.While)):
            inner = by_node.get(id(statement), step_loop)
            if isinstance(statement, cst.While):
                self._classify_test(statement.test, statement, step_loop)
            self._collect(statement.body, inner, by_node)
            return
        if isinstance(statement, cst.With):
            self._collect(statement.body, step_loop, by_node)
            return
        if isinstance(statement, cst.Try):
            self._collect(statement.body, step_loop, by_node)
            return

    # -- helpers the loop calls every step (one level deep) ---------------------------------
    def _follow_calls(self, statement: cst.CSTNode, step_loop: StepLoop) -> None:
        """Syncs inside a function or method of this file that a per-step statement calls.

        ``metric_logger.update(loss=l)`` with ``metric_logger = MetricLogger()`` and a local
        ``MetricLogger.update`` doing ``v.item()``: that ``.item()`` runs every step too.
        """
        for node in iter_nodes(statement):
            if not isinstance(node, cst.Call):
                continue
            callee = self._resolve(node, step_loop)
            if callee is None or id(callee) in self.followed:
                continue
            self.followed.add(id(callee))
            self._collect_callee(callee.body, step_loop, callee.name.value)

    def _collect_callee(self, body: cst.BaseSuite, step_loop: StepLoop, name: str) -> None:
        statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
        for statement in statements:
            self._collect_callee_statement(statement, step_loop, name)

    def _collect_callee_statement(self, statement: cst.CSTNode, step_loop: StepLoop, name: str) -> None:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                syncs = sync_calls(small, set())
                if syncs:
                    note = f"in {name}(), called every step"
                    self.result.sites.append(Site(RESIDUAL, statement, small, step_loop, syncs=syncs, note=note))
        elif isinstance(statement, cst.If):
            if not is_interval_test(statement.test) and not _ends_loop_or_function(statement.body, self.rule):
                self._collect_callee(statement.body, step_loop, name)
            if isinstance(statement.orelse, cst.If):
                self._collect_callee_statement(statement.orelse, step_loop, name)
            elif isinstance(statement.orelse, cst.Else):
                self._collect_callee(statement.orelse.body, step_loop, name)
        elif isinstance(statement, (cst.For, cst.While, cst.With, cst.Try)):
            self._collect_callee(statement.body, step_loop, name)

    def _resolve(self, call: cst.Call, step_loop: StepLoop) -> cst.FunctionDef | None:
        """The function or method of this file a call runs: ``f()``, ``self.m()``, ``obj.m()``."""
        func = call.func
        if isinstance(func, cst.Name):
            return self.functions.get(func.value)
        if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
            return None
        receiver, method = func.value.value, func.attr.value
        if receiver == "self":
            cls = self._class_of(step_loop.node)
            return self.methods.get((cls, method)) if cls else None
        scope = step_loop.function
        if scope is None:
            return None
        for node in iter_nodes(scope):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                if node.targets[0].target.value == receiver and isinstance(node.value, cst.Call):
                    cls = dotted(node.value.func)
                    if cls and (cls.split(".")[-1], method) in self.methods:
                        return self.methods[(cls.split(".")[-1], method)]
        return None

    def _class_of(self, node: cst.CSTNode) -> str | None:
        current = self.parent(node)
        while current is not None:
            if isinstance(current, cst.ClassDef):
                return current.name.value
            current = self.parent(current)
        return None

    def _tensors(self, step_loop: StepLoop) -> set[str]:
        if step_loop.tensors is not None:
            return step_loop.tensors
        scope = step_loop.function if step_loop.function is not None else step_loop.node
        names: set[str] = set()
        for node in iter_nodes(scope):
            if isinstance(node, cst.Call) and method_name(node) in {"backward", "item", "detach", "tolist"}:
                receiver = node.func.value  # type: ignore[attr-defined]
                if isinstance(receiver, cst.Name):
                    names.add(receiver.value)
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Name) and TENSOR_NAME.search(target.value):
                    if not sync_calls(node.value, set()) and isinstance(node.value, (cst.Call, cst.Attribute, cst.BinaryOperation, cst.Subscript)):
                        names.add(target.value)
        # Names that only ever hold host numbers are not tensors.
        for node in iter_nodes(scope):
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Name) and target.value in names:
                    if isinstance(node.value, (cst.Float, cst.Integer)) or sync_calls(node.value, set()):
                        names.discard(target.value)
        step_loop.tensors = names
        return names

    def _control_syncs(self, test: cst.BaseExpression, tensors: set[str]) -> list[cst.CSTNode]:
        """Syncs a truth test makes: ``.item()``, ``bool(t)``, ``if loss < best``, ``torch.isnan(loss)``."""
        syncs = sync_calls(test, tensors)
        implicit = [n for n in iter_nodes(test) if isinstance(n, cst.Name) and n.value in tensors and self._bool_use(n, test)]
        calls = [
            n
            for n in iter_nodes(test)
            if isinstance(n, cst.Call)
            and (
                self.rule.matches(n.func, "torch.isnan", "torch.isinf", "torch.isfinite", "torch.any", "torch.all", "torch.equal")
                or (method_name(n) in {"any", "all", "isnan", "isinf"} and not n.args and isinstance(n.func, cst.Attribute)
                    and not isinstance(n.func.value, (cst.List, cst.Tuple)))
            )
        ]
        return syncs or implicit or calls

    def _classify_test(self, test: cst.BaseExpression, statement: cst.BaseStatement, step_loop: StepLoop) -> None:
        found = self._control_syncs(test, self._tensors(step_loop))
        if found:
            self.result.sites.append(Site(CONTROL, statement, test, step_loop, syncs=found))

    def _bool_use(self, name: cst.Name, test: cst.BaseExpression) -> bool:
        """A tensor name used as a truth value or in a comparison (an implicit ``bool()`` sync)."""
        parent = self.parent(name)
        if name is test:
            return True
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return True
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            return True
        if isinstance(parent, cst.BooleanOperation):
            return True
        return False

    def _classify(self, small: cst.BaseSmallStatement, line: cst.SimpleStatementLine | None, step_loop: StepLoop) -> None:
        if line is None:
            return  # `if x: y` on one line: too rare to rewrite
        tensors = self._tensors(step_loop)
        syncs = sync_calls(small, tensors)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            # Only a whole line can move under the interval, and not from the else of an interval
            # branch (it would never run there).
            alone = len(line.body) == 1 and not self._in_interval_else(line, step_loop)
            if alone and self.rule.matches(
                call.func, "torch.cuda.synchronize", "torch.neuron.synchronize", "torch.accelerator.synchronize"
            ):
                self.result.sites.append(Site(SYNCHRONIZE, line, small, step_loop))
                return
            if alone and self._is_log_call(call):
                shown = syncs + formatted_tensors(call, tensors)
                if shown:
                    self.result.sites.append(Site(LOG, line, small, step_loop, syncs=shown))
                return
            if method_name(call) == "append" and syncs and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
                self.result.sites.append(
                    Site(APPEND, line, small, step_loop, syncs=syncs, target=call.func.value.value)
                )
                return
        if isinstance(small, cst.AugAssign) and syncs and isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign)):
            target = small.target.value if isinstance(small.target, cst.Name) else None
            self.result.sites.append(Site(ACCUMULATE, line, small, step_loop, syncs=syncs, target=target))
            return
        if isinstance(small, (cst.Assert,)):
            found = self._control_syncs(small.test, tensors)
            if found:
                self.result.sites.append(Site(CONTROL, line, small, step_loop, syncs=found))
            return
        if isinstance(small, cst.Assign) and syncs:
            test = self._feeds_control_flow(small, step_loop)
            if test is not None:
                note = self.module.code_for_node(test)
                self.result.sites.append(Site(CONTROL, line, small, step_loop, syncs=syncs, note=note))
                return
        if syncs:
            self.result.sites.append(Site(RESIDUAL, line, small, step_loop, syncs=syncs))

    def _in_interval_else(self, statement: cst.CSTNode, step_loop: StepLoop) -> bool:
        child, current = statement, self.parent(statement)
        while current is not None and current is not step_loop.node:
            if isinstance(current, cst.Else):
                owner = self.parent(current)
                if isinstance(owner, cst.If) and is_interval_test(owner.test):
                    return True
            if isinstance(current, cst.If) and child is current.orelse and is_interval_test(current.test):
                return True  # elif of an interval branch
            child, current = current, self.parent(current)
        return False

    def _is_log_call(self, call: cst.Call) -> bool:
        if isinstance(call.func, cst.Name):
            return call.func.value in LOG_FUNCTIONS or bool(LOG_HELPER.match(call.func.value))
        name = method_name(call)
        if name is not None and name.endswith("print"):
            return True  # xm.master_print, accelerator.print
        if name not in LOG_METHODS:
            return False
        receiver = dotted(call.func.value) if isinstance(call.func, cst.Attribute) else None  # type: ignore[union-attr]
        if name in {"log", "info", "debug"}:
            # logger.info / logging.info / wandb.log / accelerator.log / self.log
            return receiver is not None and bool(re.search(r"(?i)(log|wandb|accelerator|run|self|tracker)", receiver))
        return True

    def _feeds_control_flow(self, assign: cst.Assign, step_loop: StepLoop) -> cst.BaseExpression | None:
        """The test of an if/while/assert in the loop that reads a name this assignment sets."""
        names = {t.target.value for t in assign.targets if isinstance(t.target, cst.Name)}
        if not names:
            return None
        for node in iter_nodes(step_loop.node.body):
            if isinstance(node, (cst.If, cst.While, cst.Assert)):
                for inner in iter_nodes(node.test):
                    if isinstance(inner, cst.Name) and inner.value in names:
                        return node.test
        return None

    # -- accumulators: can the reads be converted? ------------------------------------
    def _classify_accumulators(self) -> None:
        log_lines = {id(site.statement) for site in self.result.sites if site.kind == LOG}
        for site in list(self.result.sites):
            if site.kind not in {ACCUMULATE, APPEND}:
                continue
            if site.target is None:
                site.note = "not a local name"
                continue
            function = site.loop.function
            if function is None:
                site.note = "module-level loop"
                continue
            if _declared_global(function, site.target):
                site.note = "global accumulator"
                continue
            if not self._rhs_convertible(site):
                site.note = "cannot keep this expression on the device"
                continue
            wraps = self._reads(site, function, log_lines)
            if wraps is None:
                continue
            site.wraps = wraps
        # A logging statement that reads a converted accumulator must be moved too.
        converted = {site.target for site in self.result.sites if site.kind in {ACCUMULATE, APPEND} and not site.note}
        known = {id(site.statement) for site in self.result.sites if site.kind == LOG}
        for step_loop in reversed(self.result.loops):  # innermost first: its counter is the step
            for site in self._log_statements_reading(step_loop, converted):
                if id(site.statement) not in known:
                    known.add(id(site.statement))
                    self.result.sites.append(site)

    def _log_statements_reading(self, step_loop: StepLoop, names: set[str]) -> list[Site]:
        found = []
        if not names:
            return found
        for node in iter_nodes(step_loop.node.body):
            if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
                small = node.body[0]
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and self._is_log_call(small.value):
                    if self._per_step(node, step_loop) and any(
                        isinstance(n, cst.Name) and n.value in names for n in iter_nodes(small)
                    ):
                        found.append(Site(LOG, node, small, step_loop))
        return found

    def _per_step(self, statement: cst.CSTNode, step_loop: StepLoop) -> bool:
        current = self.parent(statement)
        child: cst.CSTNode = statement
        while current is not None and current is not step_loop.node:
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                return False
            if isinstance(current, cst.If) and child is current.body:
                if is_interval_test(current.test) or _ends_loop_or_function(current.body, self.rule):
                    return False
            child, current = current, self.parent(current)
        return current is step_loop.node

    def _rhs_convertible(self, site: Site) -> bool:
        for sync in site.syncs:
            if not isinstance(sync, cst.Call) or method_name(sync) not in {"item", "numpy", "tolist"}:
                return False
            if method_name(sync) == "tolist":
                return False
        return True

    def _reads(self, site: Site, function: cst.FunctionDef, log_lines: set[int]) -> list[tuple[cst.CSTNode, str]] | None:
        """The reads of the accumulator to wrap, or None (and a note) when one cannot be converted."""
        name = site.target
        assert name is not None
        kind = "int" if self._int_initialised(function, name) else "float"
        wraps: list[tuple[cst.CSTNode, str]] = []
        for node in iter_nodes(function.body):
            if not isinstance(node, cst.Name) or node.value != name:
                continue
            parent = self.parent(node)
            if isinstance(parent, cst.AugAssign) and parent.target is node:
                if parent is site.node:
                    continue
                if any(p is parent for p in (s.node for s in self.result.sites if s.target == name)):
                    continue
                site.note = f"{name} is also updated elsewhere"
                return None
            if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Assign) and node in [t.target for t in parent.targets]):
                continue
            if isinstance(parent, cst.Tuple) and isinstance(self.parent(self.parent(parent) or parent), cst.AssignTarget):
                continue
            if isinstance(parent, cst.Element) and isinstance(self.parent(parent), cst.Tuple):
                outer = self.parent(self.parent(parent))
                if isinstance(outer, cst.AssignTarget):
                    continue
            if isinstance(parent, cst.Attribute) and parent.value is node:
                if site.kind == APPEND and parent.attr.value in {"append", "clear"}:
                    continue
                site.note = f"{name}.{parent.attr.value} is used"
                return None
            if isinstance(parent, (cst.Global, cst.Nonlocal, cst.NameItem)):
                site.note = "global"
                return None
            if isinstance(parent, cst.Arg) and isinstance(self.parent(parent), cst.Call):
                call = self.parent(parent)
                callee = dotted(call.func)  # type: ignore[union-attr]
                if callee in {"len"}:
                    continue
                if site.kind == APPEND and callee == "sum" and len(call.args) == 1:  # type: ignore[union-attr]
                    if not self._per_step_read(call, site.loop, log_lines):
                        wraps.append((call, "float"))
                        continue
                    site.note = f"{name} is read every step"
                    return None
                if callee in {"float", "int"} and site.kind == ACCUMULATE:
                    continue  # already converted where it is read
            if site.kind == APPEND:
                if isinstance(parent, cst.Subscript) and parent.value is node and not self._per_step_read(parent, site.loop, log_lines):
                    wraps.append((parent, "float"))
                    continue
                site.note = f"the list {name} is consumed out of view"
                return None
            if self._per_step_read(node, site.loop, log_lines):
                site.note = f"{name} is read every step"
                return None
            wraps.append((node, kind))
        return wraps

    def _per_step_read(self, node: cst.CSTNode, step_loop: StepLoop, log_lines: set[int]) -> bool:
        """A read inside the loop that runs every step and is not in a statement the logging rule moves."""
        current = self.parent(node)
        inside = False
        statement: cst.CSTNode | None = None
        while current is not None:
            if statement is None and isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                statement = current
            if current is step_loop.node:
                inside = True
                break
            current = self.parent(current)
        if not inside or statement is None:
            return False
        if not self._per_step(statement, step_loop):
            return False
        if not isinstance(statement, cst.SimpleStatementLine):
            return True  # a test of an if/while in the loop
        small = statement.body[0] if len(statement.body) == 1 else None
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and self._is_log_call(small.value):
            return False
        return True

    def _int_initialised(self, function: cst.FunctionDef, name: str) -> bool:
        for node in iter_nodes(function.body):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Name) and target.target.value == name:
                        return isinstance(node.value, cst.Integer)
                    if isinstance(target.target, cst.Tuple) and isinstance(node.value, cst.Tuple):
                        for left, right in zip(target.target.elements, node.value.elements):
                            if isinstance(left.value, cst.Name) and left.value.value == name:
                                return isinstance(right.value, cst.Integer)
        return False


def _modulo_pair(test: cst.BaseExpression, module: cst.Module) -> tuple[str, str] | None:
    """``counter % interval == 0`` anywhere in ``test`` -> (counter text, interval text)."""
    for node in iter_nodes(test):
        if isinstance(node, cst.Comparison) and isinstance(node.left, cst.BinaryOperation):
            left = node.left
            if (
                isinstance(left.operator, cst.Modulo)
                and len(node.comparisons) == 1
                and isinstance(node.comparisons[0].operator, cst.Equal)
                and isinstance(node.comparisons[0].comparator, cst.Integer)
                and node.comparisons[0].comparator.value == "0"
                and dotted(left.left) is not None
            ):
                return module.code_for_node(left.left), module.code_for_node(left.right)
    return None


def _declared_global(function: cst.FunctionDef, name: str) -> bool:
    for node in iter_nodes(function.body):
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(item.name.value == name for item in node.names):
            return True
    return False
