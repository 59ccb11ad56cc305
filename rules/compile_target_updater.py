"""NRN416: a torchrl HardUpdate stepped inside a compiled function runs eagerly."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import ClassVar

import libcst as cst
import libcst.matchers as m

from porter.engine.changes import ImportSpec, Safety
from porter.engine.imported import imported_module
from porter.engine.rule import Rule
from porter.rules._lib.imports import import_binding, torch_alias
from porter.rules._lib.nodes import dotted
from porter.rules._tables.compile import COUNTING_TARGET_UPDATERS


class EagerTargetUpdater(Rule):
    """Run a torchrl ``HardUpdate``'s ``step()`` eagerly when a compiled function calls it.

    What it does:
        In a function the file compiles (``update = torch.compile(update, ...)`` in the scope
        that defines it, or ``@torch.compile``), rewrites ``updater.step()`` to
        ``torch.compiler.disable(updater.step)()`` when ``updater`` holds a torchrl ``HardUpdate``
        (``COUNTING_TARGET_UPDATERS``, matched by qualified name). What the name holds is read
        where the compiled function finds it, in an enclosing function or the module, from every
        assignment of it there: ``updater = HardUpdate(...)``, or a call of a function that
        returns one: ``loss, updater = make_loss(cfg)`` with ``make_loss`` defined at the top
        level of this file or of a project module the file imports (``from utils import
        make_loss``; read through ``Options.imports``), every ``return`` of it giving, at that
        position, a name that function assigns only from ``HardUpdate(...)``. A name with any other
        binding there (a loop target, a parameter, another value) is left alone.

    Why:
        ``HardUpdate`` counts its steps in a Python int and copies the weights when the count
        reaches the interval (torchrl/objectives/utils.py, ``if self.counter ==
        self.value_network_update_interval``). Traced by Dynamo, the count becomes a guard: the
        compiled function recompiles at every step until Dynamo's cache limit (8), then runs that
        part eagerly anyway. On Neuron each recompile is a neuronx-cc compile. A function wrapped
        by ``torch.compiler.disable`` is called eagerly from compiled code (a graph break at the
        call), so the counter is never guarded on. The step copies parameters once per interval;
        eagerly it does the same copies.

    Before:
        loss_module, target_net_updater = make_discrete_loss(cfg.loss, model)

        def update(batch):
            loss = loss_module(batch)["loss"]
            loss.backward()
            optimizer.step()
            target_net_updater.step()
            return loss.detach()

        update = torch.compile(update, backend="neuron")

    After:
        def update(batch):
            ...
            torch.compiler.disable(target_net_updater.step)()
            return loss.detach()

    Safety:
        Safe: the same calls in the same order with the same values; only where Dynamo traces
        changes. The heuristic for what a name holds is above; a function is compiled when this
        file passes it by name to ``torch.compile`` in the scope that defines it (or decorates it).
        ``SoftUpdate`` is left traced (tensor arithmetic only, no Python counter).
    """

    code: ClassVar[str] = "NRN416"
    name: ClassVar[str] = "compile-target-updater"
    summary: ClassVar[str] = "HardUpdate.step() in a compiled function -> torch.compiler.disable(updater.step)()"
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = (".step()",)
    trigger_pattern: ClassVar[str] = r"compile"
    order: ClassVar[int] = 100

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if node.args or not (isinstance(func, cst.Attribute) and func.attr.value == "step" and isinstance(func.value, cst.Name)):
            return
        holder = func.value.value
        function = next((a for a in self.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)
        if not isinstance(function, cst.FunctionDef) or not self._compiled(function) or _binds(function, holder):
            return
        if not self._holds_counter(function, holder):
            return
        bound = torch_alias(self.context.module)  # `import torch.nn` binds torch too
        torch = bound or "torch"
        self.replace(
            node,
            lambda updated: cst.Call(
                func=cst.Call(func=cst.parse_expression(f"{torch}.compiler.disable"), args=[cst.Arg(updated.func)])  # type: ignore[attr-defined]
            ),
            f"{holder}.step() -> {torch}.compiler.disable({holder}.step)(): HardUpdate counts its steps in a Python int, "
            "which compiled code guards on and recompiles for at every step",
            imports=() if bound else (ImportSpec("torch"),),
        )

    # -- is the function compiled? ---------------------------------------------------------------------
    def _compiled(self, function: cst.FunctionDef) -> bool:
        if any(self._is_compile(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) for d in function.decorators):
            return True
        scope = self._scope_of(function)
        for statement in _own_statements(_body(scope)):
            for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
                if (
                    isinstance(value, cst.Call)
                    and self._is_compile(value.func)
                    and value.args
                    and value.args[0].keyword is None
                    and isinstance(value.args[0].value, cst.Name)
                    and value.args[0].value.value == function.name.value
                ):
                    return True
        return False

    def _is_compile(self, func: cst.BaseExpression) -> bool:
        return self.matches(func, "torch.compile")

    def _scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        return next((a for a in self.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.ClassDef))), self.context.module)

    # -- what the name holds -----------------------------------------------------------------------------
    def _holds_counter(self, function: cst.FunctionDef, name: str) -> bool:
        """Whether ``name``, free in ``function``, holds a counting updater where ``function`` finds it."""
        scope: cst.CSTNode = function
        while not isinstance(scope, cst.Module):
            scope = self._scope_of(scope)
            if isinstance(scope, cst.ClassDef):
                continue  # a class body's names are not seen by the methods in it
            values = _assigned(scope, name)
            if values is None:
                return False  # bound there some other way
            if values:
                return all(self._makes_counter(target, value) for target, value in values)
        return False

    def _makes_counter(self, target: int | None, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        if target is None and self.matches(value.func, *COUNTING_TARGET_UPDATERS):
            return True
        return self._returns_counter(value.func, target)

    def _returns_counter(self, func: cst.BaseExpression, position: int | None) -> bool:
        """``func`` is a top-level function of this file or of a project module whose every return
        gives a counting updater (at ``position`` of a returned tuple)."""
        if isinstance(func, cst.Name) and import_binding(self.context.module, func.value) is None:
            local = _top_level_function(self.context.module, func.value)
            if local is not None:
                return _function_returns_counter(local, position, lambda f: self.matches(f, *COUNTING_TARGET_UPDATERS))
        for qualified in self.qualified(func):
            module, _, name = qualified.rpartition(".")
            if not module or module.startswith("torch"):
                continue
            tree = imported_module(self.options, module, defining=name) if self.options.imports else None
            defined = _top_level_function(tree, name) if tree is not None else None
            if tree is not None and defined is not None:
                return _function_returns_counter(defined, position, partial(_counts_in, tree))
        return False


def _body(scope: cst.CSTNode) -> tuple[cst.BaseStatement, ...]:
    if isinstance(scope, cst.Module):
        return tuple(scope.body)
    body = getattr(scope, "body", None)
    return tuple(body.body) if isinstance(body, cst.IndentedBlock) else ()


def _own_statements(body: tuple[cst.BaseStatement, ...]) -> Iterator[cst.BaseStatement]:
    """The statements of a scope, into its compound statements, not into nested functions or classes."""
    for statement in body:
        yield statement
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        for part in _blocks(statement):
            yield from _own_statements(part)


def _blocks(statement: cst.BaseStatement) -> Iterator[tuple[cst.BaseStatement, ...]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(statement, field, None)
        if isinstance(block, (cst.Else, cst.Finally, cst.If)):
            if isinstance(block, cst.If):
                yield (block,)
                continue
            block = block.body
        if isinstance(block, cst.IndentedBlock):
            yield tuple(block.body)
    for handler in getattr(statement, "handlers", ()):
        if isinstance(handler.body, cst.IndentedBlock):
            yield tuple(handler.body.body)


def _binds(function: cst.FunctionDef, name: str) -> bool:
    """``name`` is a parameter of ``function`` or bound in its own body (then it is local)."""
    return _assigned(function, name) != []


def _assigned(scope: cst.CSTNode, name: str) -> list[tuple[int | None, cst.BaseExpression]] | None:
    """Every plain assignment of ``name`` in ``scope``'s own statements, as (position in a tuple
    target or None, value); None when the scope binds it any other way (a loop, ``with``, an
    augmented assignment, ``global``, an import, a nested def of that name, a parameter)."""
    found: list[tuple[int | None, cst.BaseExpression]] = []
    if isinstance(scope, cst.FunctionDef):
        params = scope.params
        if any(p.name.value == name for p in (*params.posonly_params, *params.params, *params.kwonly_params)):
            return None
    for statement in _own_statements(_body(scope)):
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            if statement.name.value == name:
                return None
            continue
        if isinstance(statement, (cst.For, cst.With)) and name in _names(statement.target if isinstance(statement, cst.For) else statement.items):
            return None
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    spot = _position(target.target, name)
                    if spot == -1:
                        return None
                    if spot is not None:
                        found.append((None if spot == -2 else spot, small.value))
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)) and name in _names(small.target):
                return None
            elif isinstance(small, (cst.Global, cst.Nonlocal)) and any(n.name.value == name for n in small.names):
                return None
            elif isinstance(small, (cst.Import, cst.ImportFrom)) and name in _names(small):
                return None
    return found


def _position(target: cst.BaseExpression, name: str) -> int | None:
    """-2: the target is ``name``; k: ``name`` is element k of a flat tuple target; None: not
    bound by it; -1: bound some other way (starred, nested, attribute of it)."""
    if isinstance(target, cst.Name):
        return -2 if target.value == name else None
    if isinstance(target, (cst.Tuple, cst.List)):
        for index, element in enumerate(target.elements):
            if isinstance(element.value, cst.Name) and not isinstance(element, cst.StarredElement):
                if element.value.value == name:
                    return index
            elif name in _names(element.value):
                return -1
        return None
    return None


def _names(node: cst.CSTNode | Sequence[cst.CSTNode]) -> set[str]:
    """Every Name under ``node`` (or under each node of a sequence)."""
    nodes = [node] if isinstance(node, cst.CSTNode) else list(node)
    return {n.value for inner in nodes for n in m.findall(inner, m.Name()) if isinstance(n, cst.Name)}


def _top_level_function(module: cst.Module, name: str) -> cst.FunctionDef | None:
    found = [s for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == name]
    return found[0] if len(found) == 1 and isinstance(found[0], cst.FunctionDef) else None


def _function_returns_counter(function: cst.FunctionDef, position: int | None,
                              check: Callable[[cst.BaseExpression], bool]) -> bool:
    """Every ``return`` of ``function`` gives (at ``position`` of a returned tuple) a name the
    function assigns only from a call whose callee ``check`` accepts."""
    returns = [small for statement in _own_statements(_body(function)) if isinstance(statement, cst.SimpleStatementLine)
               for small in statement.body if isinstance(small, cst.Return)]
    if not returns:
        return False
    for ret in returns:
        value = ret.value
        if position is not None:
            if not isinstance(value, cst.Tuple) or position >= len(value.elements) or isinstance(value.elements[position], cst.StarredElement):
                return False
            value = value.elements[position].value
        if isinstance(value, cst.Call):
            if not check(value.func):
                return False
            continue
        if not isinstance(value, cst.Name):
            return False
        assigned = _assigned(function, value.value)
        if not assigned or any(spot is not None or not isinstance(made, cst.Call) or not check(made.func) for spot, made in assigned):
            return False
    return True


def _counts_in(module: cst.Module, callee: cst.BaseExpression) -> bool:
    """``callee``, a name or dotted chain of ``module`` (another file), read through that module's
    top-level imports, is a counting target updater."""
    text = dotted(callee)
    if text is None:
        return False
    head, _, rest = text.partition(".")
    binding = import_binding(module, head)
    if binding is None:
        return False
    source, obj, asname = binding
    # from a import B -> a.B; import a.b as m -> a.b; import a.b -> a (it binds the head)
    base = f"{source}.{obj}" if obj else source if asname else head
    return (f"{base}.{rest}" if rest else base) in COUNTING_TARGET_UPDATERS
