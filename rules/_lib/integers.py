"""Which names of a file hold integers (device indices): NRN102 and NRN105 decide alike."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from porter.engine.fastcst.walk import TreeIndex
from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.device import INT_DEVICE_NAME
from porter.rules._lib.nodes import dotted
from porter.rules._lib.tree import child_index, visit_original


@dataclass(frozen=True)
class IntegerNames(FileAnalysis):
    """Dotted names the file shows to hold ints, and those it shows to hold something else."""

    ints: frozenset[str]
    not_ints: frozenset[str]

    @classmethod
    def compute(cls, rule: Rule) -> IntegerNames:
        ints, others = _integer_names(rule.context.module, child_index(rule))
        return cls(frozenset(ints), frozenset(others))

    def holds_index(self, value: cst.BaseExpression) -> bool:
        return holds_index(value, self.ints, self.not_ints)


def holds_index(value: cst.BaseExpression, ints: frozenset[str] | set[str], not_ints: frozenset[str] | set[str]) -> bool:
    """NRN105's argument heuristic: an integer literal, or a name the file shows to hold an int
    or named like an index (``local_rank``, ``device_id``) and not shown to hold anything else."""
    if isinstance(value, cst.Integer):
        return True
    text = dotted(value)
    if text is None or text in not_ints:
        return False
    return text in ints or bool(INT_DEVICE_NAME.match(text.split(".")[-1]))


def _integer_names(module: cst.Module, index: TreeIndex | None = None) -> tuple[set[str], set[str]]:
    """Dotted names the file shows to hold ints (``x = int(...)``, ``x: int``, ``for x in range``),
    and names it shows to hold something else (``gpu = torch.device(...)``, ``rank = "cuda:0"``)."""
    found: set[str] = set()
    others: set[str] = set()
    copies: list[tuple[str, str]] = []

    class _Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                name = dotted(target.target)
                if name is None:
                    continue
                value = node.value
                if isinstance(value, cst.Call) and dotted(value.func) == "int":
                    found.add(name)
                elif dotted(value) is not None:
                    copies.append((name, dotted(value) or ""))
                elif isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)) or (
                    isinstance(value, cst.Call) and (dotted(value.func) or "").endswith("device")
                ):
                    others.add(name)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            name = dotted(node.target)
            if name is not None and dotted(node.annotation.annotation) == "int":
                found.add(name)

        def visit_Param(self, node: cst.Param) -> None:
            annotation = dotted(node.annotation.annotation) if node.annotation is not None else None
            if annotation == "int":
                found.add(node.name.value)
            elif annotation is not None and annotation.split(".")[-1] in ("device", "str"):
                others.add(node.name.value)

        def visit_For(self, node: cst.For) -> None:
            name = dotted(node.target)
            if name is not None and isinstance(node.iter, cst.Call) and dotted(node.iter.func) == "range":
                found.add(name)

    visit_original(index, module, _Collect())
    for target, source in copies:
        # a copy of a name the file shows to hold a device or a string is not an index, whatever
        # the name (deepspeed's ``self.local_device = torch.device(...)``, copied to ``device``)
        if source not in others and (source in found or INT_DEVICE_NAME.match(source.split(".")[-1])):
            found.add(target)
    return found - others, others


@dataclass(frozen=True)
class NoneNames(FileAnalysis):
    """Names the file shows may hold None: ``args.<dest>`` of an argparse option with no default
    (or ``default=None``), and parameters that default to ``None``."""

    options: frozenset[str]  # argparse dests: matched as the last part of an attribute (args.gpu)
    params: frozenset[tuple[int, str]]  # (id of the function, parameter name): a bare name in it

    @classmethod
    def compute(cls, rule: Rule) -> NoneNames:
        options: set[str] = set()
        params: set[tuple[int, str]] = set()

        class _Collect(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                for param in (*node.params.params, *node.params.kwonly_params):
                    if isinstance(param.default, cst.Name) and param.default.value == "None":
                        params.add((id(node), param.name.value))

            def visit_Call(self, node: cst.Call) -> None:
                dest = _argparse_none_dest(node)
                if dest is not None:
                    options.add(dest)

        visit_original(child_index(rule), rule.context.module, _Collect())
        return cls(frozenset(options), frozenset(params))

    def may_be_none(self, rule: Rule, value: cst.BaseExpression) -> bool:
        """``value`` (a node of ``rule``'s file) may be None where it is used."""
        if isinstance(value, cst.Name):
            if value.value == "None":
                return True
            function = next((a for a in rule.ancestors(value) if isinstance(a, cst.FunctionDef)), None)
            return function is not None and (id(function), value.value) in self.params
        if isinstance(value, cst.Attribute):
            return value.attr.value in self.options
        return False


def _argparse_none_dest(call: cst.Call) -> str | None:
    """The dest of ``parser.add_argument("--gpu", type=int)`` when its default is None."""
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value != "add_argument":
        return None
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    action = keywords.get("action")
    if isinstance(action, cst.SimpleString) and "store_" in str(action.evaluated_value):
        return None  # store_true/store_false/store_const: a bool or a constant
    default = keywords.get("default")
    if default is not None and not (isinstance(default, cst.Name) and default.value == "None"):
        return None
    required = keywords.get("required")
    if isinstance(required, cst.Name) and required.value == "True":
        return None
    if isinstance(keywords.get("dest"), cst.SimpleString):
        return str(keywords["dest"].evaluated_value)  # type: ignore[attr-defined]
    flags = [str(arg.value.evaluated_value) for arg in call.args if arg.keyword is None and isinstance(arg.value, cst.SimpleString)]
    options = [flag for flag in flags if flag.startswith("-")]  # a positional argument is required
    long = [flag for flag in options if flag.startswith("--")]
    if not options:
        return None
    name = (long or options)[0].lstrip("-")
    return name.replace("-", "_") if name else None
