"""Step loops: which loops train or evaluate, their step counter and their logging interval.

- A *step loop* is a ``for``/``while`` whose own body (outside nested loops and definitions)
  calls ``.backward()``, ``.zero_grad()``, an optimizer's ``.step()`` (receiver named like
  ``optimizer``/``opt``, or ``scaler.step(optimizer)``), or a function/method of this file whose
  body does so outside a loop. An *evaluation loop* iterates over something named like a loader
  inside ``torch.no_grad()``/``torch.inference_mode()`` or a function named like
  eval/validate/evaluate. A loop whose only steps are in nested loops (an epoch loop) is neither.
- The step counter is the counter of an existing ``if X % Y == 0`` in the loop, else the loop's
  ``enumerate`` index, else a name or attribute incremented by ``+= 1`` in the loop body outside
  any ``if``, else the target of ``for epoch in range(...)``, else an increment under an ``if``.
- The interval is Y of an existing ``if X % Y == 0`` only when Y is named like a logging interval
  or the branch logs and neither saves nor evaluates (a checkpoint or evaluation interval is
  another cadence: never reused),
  else a name spelled like a logging interval (``log_interval``, ``print_freq``, ``log_every``...)
  in the function, an argparse option of that name, a module constant, else a new module
  constant ``LOG_INTERVAL``.
"""

from __future__ import annotations

import re

import libcst as cst

from porter.rules._lib.hostsync.model import (
    CONSTANT,
    EVAL_FUNCTION,
    INTERVAL_NAME,
    LOADER_NAME,
    LOGGING_WORD,
    OPTIMIZER_NAME,
    StepLoop,
)
from porter.rules._lib.hostsync.scope import FileScope
from porter.rules._lib.hostsync.syntax import iter_nodes, modulo_pair
from porter.rules._lib.nodes import dotted, method_name

# Where a call's "direct" body ends: loops and definitions (see StepLoops._direct_calls).
_OWNERS = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)
# A branch that saves or evaluates runs on another cadence, even if it also prints.
_OTHER_CADENCE = re.compile(r"(?i)(save|checkpoint|ckpt|eval|valid|test)")
_HOLDERS = ("args", "opt", "opts", "cfg", "config", "hparams")


class StepLoops:
    """Finds the file's step loops (``find``) and where a new ``LOG_INTERVAL`` would go."""

    def __init__(self, scope: FileScope) -> None:
        self.scope = scope
        self.step_functions: set[str] = set()
        self.direct_calls: dict[cst.CSTNode, list[cst.Call]] | None = None
        self.argparse_interval: list[str | None] = []  # cached _argparse_interval()
        self.constant_anchor: cst.BaseStatement | None = None
        self.constant_before = False

    def find(self) -> list[StepLoop]:
        scope = self.scope
        self._find_step_functions()
        self._find_constant_anchor()
        loops: list[StepLoop] = []
        for loop in scope.index.find(scope.module, cst.For, cst.While):
            assert isinstance(loop, (cst.For, cst.While))
            kind = self._loop_kind(loop)
            if kind is not None:
                step_loop = StepLoop(loop, kind, scope.function_of(loop))
                self._find_counter(step_loop)
                loops.append(step_loop)
        return loops

    # -- step loop detection -------------------------------------------------
    def _direct_calls(self) -> dict[cst.CSTNode, list[cst.Call]]:
        """Every call of the file under the body of its nearest loop/def/lambda, keyed by that body.

        One upward walk per call replaces walking every loop and function body (nested loops
        were walked once per enclosing loop).
        """
        if self.direct_calls is None:
            self.direct_calls = {}
            scope = self.scope
            for call in scope.index.find(scope.module, cst.Call):
                child, current = call, scope.parent(call)
                while current is not None and not isinstance(current, _OWNERS):
                    child, current = current, scope.parent(current)
                if current is not None and child is getattr(current, "body", None):
                    self.direct_calls.setdefault(child, []).append(call)  # type: ignore[arg-type]
        return self.direct_calls

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
        return bool(callee) and (callee in self.step_functions or (callee.startswith("self.") and last in self.step_functions))

    def _find_step_functions(self) -> None:
        for node in self.scope.index.find(self.scope.module, cst.FunctionDef):
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
        if any(self._signal_call(call) for call in self._direct_calls().get(loop.body, ())):
            return "train"
        if isinstance(loop, cst.For) and self._is_eval_loop(loop):
            return "eval"
        return None

    def _no_grad(self, node: cst.With) -> bool:
        for item in node.items:
            target = item.item.func if isinstance(item.item, cst.Call) else item.item
            if self.scope.rule.matches(target, "torch.no_grad", "torch.inference_mode"):
                return True
        return False

    def _is_eval_loop(self, loop: cst.For) -> bool:
        scope = self.scope
        text = scope.code(loop.iter)
        if not LOADER_NAME.search(text):
            return False
        if EVAL_FUNCTION.search(text) or any(
            isinstance(node, cst.With) and self._no_grad(node) for node in iter_nodes(scope.index, loop.body)
        ):
            return True
        function = scope.function_of(loop)
        if function is not None:
            if EVAL_FUNCTION.search(function.name.value):
                return True
            for decorator in function.decorators:
                target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
                if scope.rule.matches(target, "torch.no_grad", "torch.inference_mode"):
                    return True
        current = scope.parent(loop)
        while current is not None and not isinstance(current, cst.FunctionDef):
            if isinstance(current, cst.With) and self._no_grad(current):
                return True
            current = scope.parent(current)
        return False

    # -- counter and interval --------------------------------------------------
    def _find_counter(self, step_loop: StepLoop) -> None:
        scope, loop = self.scope, step_loop.node
        for node in iter_nodes(scope.index, loop.body):
            if isinstance(node, cst.If) and not scope.inside_nested_loop(node, loop.body):
                pair = modulo_pair(scope.index, node.test, scope.module)
                if pair is not None:
                    step_loop.counter = pair[0]
                    if self._logging_branch(node, pair[1]):
                        step_loop.interval = pair[1]
                        return
                    break  # a checkpoint/eval cadence: its counter is the step, its interval is not ours
        if step_loop.counter is None and isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call):
            if dotted(loop.iter.func) == "enumerate" and isinstance(loop.target, cst.Tuple) and loop.target.elements:
                first = loop.target.elements[0].value
                if isinstance(first, cst.Name):
                    step_loop.counter = first.value
        if step_loop.counter is None:
            increments = [
                node
                for node in iter_nodes(scope.index, loop.body)
                if isinstance(node, cst.AugAssign)
                and isinstance(node.operator, cst.AddAssign)
                and isinstance(node.value, cst.Integer)
                and node.value.value == "1"
                and not scope.inside_nested_loop(node, loop.body)
                and dotted(node.target)
            ]
            # An increment under an `if` (``bad_counter += 1`` in an else) counts something else:
            # the loop's own range target comes before it.
            unconditional = [n for n in increments if not self._conditional(n, loop.body)]
            target = self._range_target(loop)
            chosen = dotted(unconditional[0].target) if unconditional else target
            if chosen is None and increments:
                chosen = dotted(increments[0].target)  # type: ignore[union-attr]
            step_loop.counter = chosen
        if step_loop.counter is None and isinstance(loop, cst.For):
            step_loop.counter = self._free_name(step_loop.function, ("step", "log_step", "porter_step"))
            step_loop.needs_enumerate = step_loop.counter is not None
        step_loop.interval = self._interval_name(step_loop.function)
        if step_loop.interval is None:
            step_loop.interval = CONSTANT
            step_loop.uses_constant = True

    def _conditional(self, node: cst.CSTNode, body: cst.CSTNode) -> bool:
        current = self.scope.parent(node)
        while current is not None and current is not body:
            if isinstance(current, cst.If):
                return True
            current = self.scope.parent(current)
        return False

    @staticmethod
    def _range_target(loop: cst.For | cst.While) -> str | None:
        """``epoch`` of ``for epoch in range(n)`` (step 1): it counts the iterations."""
        if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name) or not isinstance(loop.iter, cst.Call):
            return None
        if dotted(loop.iter.func) != "range" or len(loop.iter.args) > 2 or any(a.keyword or a.star for a in loop.iter.args):
            return None
        return loop.target.value

    def _logging_branch(self, branch: cst.If, interval: str) -> bool:
        """``if step % log_every == 0: print(...)``: a logging cadence (not checkpoints, not evaluation)."""
        if LOGGING_WORD.search(interval.split(".")[-1]):
            return True
        body = branch.body.body if isinstance(branch.body, cst.IndentedBlock) else ()
        if any(_OTHER_CADENCE.search(self.scope.code(statement)) for statement in body):
            return False
        return any(self.scope.log_statement(statement) is not None for statement in body)

    def _free_name(self, function: cst.FunctionDef | None, candidates: tuple[str, ...]) -> str | None:
        scope = self.scope
        root: cst.CSTNode = function if function is not None else scope.module
        used = {
            n.value
            for n in iter_nodes(scope.index, root, into_scopes=True)
            if isinstance(n, cst.Name)
            and not (isinstance(scope.parent(n), cst.Attribute) and scope.parent(n).attr is n)  # type: ignore[union-attr]
        }
        return next((name for name in candidates if name not in used), None)

    def _interval_name(self, function: cst.FunctionDef | None) -> str | None:
        scope = self.scope
        if function is not None:
            for node in iter_nodes(scope.index, function, into_scopes=True):
                if isinstance(node, cst.Name) and INTERVAL_NAME.match(node.value):
                    parent = scope.parent(node)
                    if isinstance(parent, cst.Attribute) and parent.attr is node:
                        text = dotted(parent)
                        if text and text.split(".")[0] in {"self", "FLAGS", *_HOLDERS}:
                            return text
                        continue
                    if isinstance(parent, (cst.Arg, cst.Call)) and getattr(parent, "keyword", None) is node:
                        continue
                    return node.value
        option = self._argparse_interval()
        if option is not None and function is not None:
            holders = {p.name.value for p in function.params.params} | {
                n.value for n in iter_nodes(scope.index, function) if isinstance(n, cst.Name)
            }
            for holder in _HOLDERS:
                if holder in holders:
                    return f"{holder}.{option}"
        for statement in scope.module.body:
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
        for node in self.scope.index.find(self.scope.module, cst.Call):
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
        body = self.scope.module.body
        last_import: cst.BaseStatement | None = None
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
            ):
                last_import = statement
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef, cst.For, cst.While, cst.With)):
                break  # the constant must exist before any code that may run a step loop
        if last_import is not None:
            self.constant_anchor = last_import
        elif body:
            first = body[0]
            docstring = (
                isinstance(first, cst.SimpleStatementLine)
                and isinstance(first.body[0], cst.Expr)
                and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
            )
            self.constant_anchor = first
            self.constant_before = not docstring
