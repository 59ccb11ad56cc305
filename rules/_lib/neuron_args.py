"""Argument fixes for ``torch.cuda.X(...)`` calls renamed to ``torch.neuron.X`` (no rule lives here).

The rule cuda-namespace renames; this module makes the renamed call's arguments ones the real
``torch.neuron.X`` binds and accepts (``rules/_tables/neuron_api.py`` records each signature with its
source and lists the differences in ``ARGUMENT_FIXES``). Where the arguments cannot be proved
acceptable it adds an NRN104 marker, and where the renamed call could only crash it keeps the
CUDA call with a marker instead of renaming.

What a name holds, the heuristic: an integer literal, or a name the file shows to hold an int or
named like an index (``local_rank``, ``device_id``: NRN105's ``holds_index``) is an int; a
``torch.device(...)`` call, or a name every assignment in the file gives a ``torch.device(...)``,
is a ``torch.device``; a name like ``device``/``dev`` may hold a string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.args import keyword
from porter.rules._lib.device import DEVICE_NAME, accelerator_string, cuda_string, neuron_string, torch_ref
from porter.rules._lib.integers import IntegerNames
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.tree import child_index, visit_original
from porter.rules._tables.neuron_api import DEVICE_PROPERTIES

_DEVICE_LITERAL = re.compile(r"^(cuda|neuron)(?::(\d+))?$")
_PERCENT_DEVICE = re.compile(r"^(cuda|neuron):%[di]$")  # "cuda:%d" % local_rank
# Calls that return an int device index (or a rank used as one).
_INT_RESULTS = (
    "int", "builtins.int", "torch.cuda.current_device", "torch.neuron.current_device",
    "torch.accelerator.current_device_index", "torch.distributed.get_rank", "torch.distributed.get_node_local_rank",
)
_NO_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
_MARKER = "NRN104"


def port_arguments(rule: Rule, node: cst.BaseExpression, head: str) -> bool:
    """Fix the arguments of the call ``node`` (``torch.cuda.<head>``) is the function of.

    False: the call must not be renamed (a marker was added; renamed, it could only crash).
    """
    call = rule.parent(node)
    if not isinstance(call, cst.Call) or call.func is not node:
        return True  # a reference, not a call (``s = torch.cuda.Stream``): nothing binds here
    if head in _NEURON_TYPED:
        _device_string(rule, call, _NEURON_TYPED[head])
    fix = _FIXES.get(head)
    return fix(rule, call) if fix is not None else True


# Calls whose device argument must name a neuron device (torch_neuronx._get_device_index raises
# ValueError for "cuda:0"; get_device_properties parses only strings containing "neuron"): the
# position of that argument. Strings there become Neuron strings, wherever other rules leave them.
_NEURON_TYPED: dict[str, int] = {
    "synchronize": 0,
    "current_stream": 0,
    "default_stream": 0,
    "device": 0,
    "get_device_properties": 0,
    "Stream": 0,
}


def _device_string(rule: Rule, call: cst.Call, position: int) -> None:
    # Positional only: device-strings (NRN101) ports a device= keyword in any call.
    plain = [a for a in call.args if a.keyword is None and not a.star]
    arg = plain[position] if position < len(plain) else None
    if arg is None or not cuda_string(arg.value):
        return
    rule.replace(
        arg.value,
        lambda n: neuron_string(_expression(n)) if cuda_string(n) else n,
        f"torch.neuron.{_call_name(call)} takes neuron devices only (ValueError for {_text(arg.value)}): device string -> neuron",
    )


def _accelerator_device_string(rule: Rule, call: cst.Call, position: int) -> None:
    """Accelerator style: a positional ``"cuda:0"`` device -> the current accelerator's type with
    that index (``torch.accelerator.current_stream("cuda:0")`` would still ask for CUDA)."""
    plain = [a for a in call.args if a.keyword is None and not a.star]
    arg = plain[position] if position < len(plain) else None
    if arg is None or not cuda_string(arg.value):
        return
    name, imports = torch_ref(rule.context.module)
    rule.replace(
        arg.value,
        lambda n: accelerator_string(_expression(n), name) if cuda_string(n) else n,
        f"{_call_name(call)}({_text(arg.value)}): device string -> the current accelerator's type",
        imports=imports,
    )


# torch.accelerator's counterparts whose device parameter is positional-only (torch 2.13
# signatures: ``set_device_index(device, /)``, ``synchronize(device=None, /)``, ...): CUDA's names it.
_POSITIONAL_ONLY: dict[str, str] = {
    "set_device": "set_device_index",
    "synchronize": "synchronize",
    "current_stream": "current_stream",
    "device": "device_index",
}


def _positional_device(rule: Rule, call: cst.Call, target: str) -> None:
    arg = keyword(call, "device")
    if arg is None or any(a.keyword is None for a in call.args):
        return
    rule.replace(
        arg,
        lambda n: n.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT),  # type: ignore[attr-defined]
        f"torch.accelerator.{target}(device=...) -> (device): its parameter is positional-only",
    )


def _accelerator_set_device(rule: Rule, call: cst.Call) -> None:
    """``torch.accelerator.set_device_index`` takes an index or a device of the current
    accelerator's type: ``"cuda:1"`` raises ValueError on Neuron. A literal ``"cuda:N"`` -> ``N``;
    other CUDA strings (``f"cuda:{rank}"``) -> the current accelerator's type with that index."""
    arg = _device_arg(call)
    if arg is None or arg.star:
        return
    literal = string_value(arg.value)
    index = literal.split(":")[1] if literal is not None and re.fullmatch(r"cuda:\d+", literal) else _accelerator_index(arg.value)
    if index is None and not cuda_string(arg.value):
        return
    if index is not None:
        # The index replaces whatever another rule made of the string (NRN101's accelerator form).
        rule.replace(
            arg.value,
            cst.Integer(index),
            f"set_device_index({_text(arg.value)}) -> ({index}): a device index, valid on every accelerator",
            drops_calls=True,
        )
        return
    name, imports = torch_ref(rule.context.module)
    rule.replace(
        arg.value,
        lambda n: accelerator_string(_expression(n), name) if cuda_string(n) else n,
        f"set_device_index({_text(arg.value)}): device string -> the current accelerator's type",
        imports=imports,
    )


def _accelerator_index(value: cst.BaseExpression) -> str | None:
    """``N`` of ``f"{torch.accelerator.current_accelerator().type}:N"`` (NRN101's form of
    ``"cuda:N"``, when it ran first), else None."""
    if not isinstance(value, cst.FormattedString) or len(value.parts) != 2:
        return None
    head, tail = value.parts
    if not (isinstance(head, cst.FormattedStringExpression) and isinstance(tail, cst.FormattedStringText)):
        return None
    kind = head.expression
    if not (isinstance(kind, cst.Attribute) and kind.attr.value == "type" and isinstance(kind.value, cst.Call)):
        return None
    if not (dotted(kind.value.func) or "").endswith("accelerator.current_accelerator"):
        return None
    found = re.fullmatch(r":(\d+)", tail.value)
    return found.group(1) if found else None


def _call_name(call: cst.Call) -> str:
    return (dotted(call.func) or "").split(".")[-1]


def _stream(rule: Rule, call: cst.Call) -> bool:
    """torch.neuron.Stream(**kwargs): CUDA's positional device/priority become keywords."""
    if any(arg.star for arg in call.args):
        rule.mark(call, "torch.neuron.Stream takes keyword arguments only: pass device=/priority= by name", code=_MARKER)
        return False
    count = sum(1 for arg in call.args if arg.keyword is None)
    if count == 0:
        return True
    if count > 2:
        rule.mark(call, "torch.cuda.Stream with more than two positional arguments: port by hand", code=_MARKER)
        return False
    names = ("device", "priority")[:count]
    message = f"torch.neuron.Stream takes keywords only: positional {', '.join(names)} passed by name"
    # The priority range is checked in C++ code that was not read (_neuron_api: Stream).
    safety = Safety.REVIEW if count == 2 else None
    rule.replace(call, lambda n: _keywordize(_call(n), names), message, safety=safety)
    return True


def _call(node: cst.CSTNode) -> cst.Call:
    assert isinstance(node, cst.Call)  # the updated form of a call is a call
    return node


def _keywordize(call: cst.Call, names: tuple[str, ...]) -> cst.Call:
    out, position = [], 0
    for arg in call.args:
        if arg.keyword is None and position < len(names):
            arg = arg.with_changes(keyword=cst.Name(names[position]), equal=_NO_EQUAL)
            position += 1
        out.append(arg)
    return call.with_changes(args=out)


def _event(rule: Rule, call: cst.Call) -> bool:
    """torch.neuron.Event(enable_timing=False, blocking=False): no interprocess/external."""
    extra = [arg for arg in call.args if arg.keyword is not None and arg.keyword.value in ("interprocess", "external")]
    extra += [arg for arg in call.args if arg.keyword is None][2:]
    if any(arg.star for arg in call.args):
        rule.mark(call, "torch.neuron.Event(enable_timing=False, blocking=False) only: check what *args/**kwargs pass", code=_MARKER)
        return True
    if not extra:
        return True
    if not all(_is_false(arg.value) for arg in extra):
        rule.mark(
            call,
            "torch.neuron.Event has no interprocess/external: IPC and external events are CUDA-only; "
            "share results through torch.distributed instead",
            code=_MARKER,
        )
        return False
    dropped = {id(arg) for arg in extra}
    positions = [index for index, arg in enumerate(call.args) if id(arg) in dropped]
    rule.replace(
        call,
        lambda n: _without(_call(n), positions),
        "interprocess=False/external=False dropped: torch.neuron.Event(enable_timing=False, blocking=False) has neither",
    )
    return True


def _without(call: cst.Call, positions: list[int]) -> cst.Call:
    kept = [arg for index, arg in enumerate(call.args) if index not in positions]
    if kept:
        kept[-1] = kept[-1].with_changes(comma=call.args[-1].comma)
    return call.with_changes(args=kept)


def _is_false(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "False"


def _bf16(rule: Rule, call: cst.Call) -> bool:
    """torch.neuron.is_bf16_supported() takes no arguments (and is always True)."""
    if not call.args:
        return True
    if not all(isinstance(arg.value, (cst.Name, cst.Attribute)) and not arg.star for arg in call.args):
        rule.mark(call, "torch.neuron.is_bf16_supported() takes no arguments: drop them (keep any side effect)", code=_MARKER)
        return True
    rule.replace(
        call,
        lambda n: n.with_changes(args=()),
        "is_bf16_supported(including_emulation=...) -> is_bf16_supported(): Neuron's takes no arguments (bf16 is native)",
    )
    return True


def _device_arg(call: cst.Call) -> cst.Arg | None:
    found = keyword(call, "device")
    if found is not None:
        return found
    plain = [arg for arg in call.args if arg.keyword is None]
    return plain[0] if plain else None


def _current_device(rule: Rule) -> tuple[cst.BaseExpression, tuple[ImportSpec, ...]]:
    name, imports = torch_ref(rule.context.module)
    module = "accelerator.current_device_index" if rule.options.style == "accelerator" else "neuron.current_device"
    return cst.parse_expression(f"{name}.{module}()"), imports


def _index_for(rule: Rule, value: cst.BaseExpression) -> tuple[cst.BaseExpression, tuple[ImportSpec, ...]] | None:
    """The int a device-string literal (or None) stands for, as an expression; None if not provable."""
    if isinstance(value, cst.Name) and value.value == "None":
        return _current_device(rule)
    inner = _formatted_index(value)
    if inner is not None:
        return (inner, ()) if rule.analysis(IntegerNames).holds_index(inner) else None
    text = string_value(value)
    found = _DEVICE_LITERAL.match(text) if text is not None else None
    if found is None:
        return None
    if found.group(2) is not None:
        return cst.Integer(found.group(2)), ()
    return _current_device(rule)


def _formatted_index(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """``x`` in ``f"cuda:{x}"`` (or ``f"neuron:{x}"``), else None."""
    if not isinstance(value, cst.FormattedString) or len(value.parts) != 2:
        return None
    text, expression = value.parts
    if not isinstance(text, cst.FormattedStringText) or text.value not in ("cuda:", "neuron:"):
        return None
    if not isinstance(expression, cst.FormattedStringExpression) or expression.format_spec or expression.conversion:
        return None
    return expression.expression


def _holds_int_or_device(rule: Rule, value: cst.BaseExpression) -> bool:
    if rule.analysis(IntegerNames).holds_index(value):
        return True
    if isinstance(value, cst.Call) and rule.matches(value.func, "torch.device", *_INT_RESULTS):
        return True
    return _assigned(rule, value) == {"device"}


def _assigned(rule: Rule, value: cst.BaseExpression) -> set[str]:
    """What the assignments of the name ``value`` give it, in the scope the name resolves to (the
    enclosing function when it assigns the name there, else the module): "device"
    (``torch.device(...)``), "string" (a CUDA/Neuron device string or f-string), "other"; empty
    when that scope never assigns it."""
    text = dotted(value)
    if text is None:
        return set()
    kinds = rule.analysis(AssignedDeviceKinds).kinds
    scope = next((a for a in rule.ancestors(value) if isinstance(a, (cst.FunctionDef, cst.ClassDef))), None)
    if "." not in text and scope is not None and (id(scope), text) in kinds:
        return set(kinds[(id(scope), text)])
    return set(kinds.get((None, text), set()))


@dataclass(frozen=True)
class AssignedDeviceKinds(FileAnalysis):
    """(scope, name) -> what the file assigns the name: "device", "string" or "other"."""

    kinds: dict[tuple[int | None, str], set[str]]

    @classmethod
    def compute(cls, rule: Rule) -> AssignedDeviceKinds:
        return cls(_collect_kinds(rule))


def _value_kind(rule: Rule, value: cst.BaseExpression) -> str:
    """"device" (``torch.device(...)``), "string" (a CUDA/Neuron device string, f-string or
    ``"cuda:%d" % i``) or "other"."""
    if isinstance(value, cst.Call) and rule.matches(value.func, "torch.device"):
        return "device"
    if cuda_string(value) or _formatted_index(value) is not None or _DEVICE_LITERAL.match(string_value(value) or "-"):
        return "string"
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Modulo) and _PERCENT_DEVICE.match(string_value(value.left) or "-"):
        return "string"
    return "other"


def _assigned_just_before(rule: Rule, value: cst.BaseExpression) -> str | None:
    """The kind of the value the name ``value`` was last given in the same block, before the
    statement that reads it (``device = "cuda:%d" % rank`` then ``set_device(device)``); None when
    that block does not assign it first."""
    if not isinstance(value, cst.Name):
        return None
    statement = rule.statement_of(value)
    block = rule.parent(statement)
    body = getattr(block, "body", None)
    if not isinstance(body, (list, tuple)) or statement not in body:
        return None
    for earlier in reversed(body[: body.index(statement)]):
        if not isinstance(earlier, cst.SimpleStatementLine):
            return None  # a branch or loop between them may assign it
        for small in reversed(earlier.body):
            if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == value.value for t in small.targets):
                return _value_kind(rule, small.value)
    return None


def _collect_kinds(rule: Rule) -> dict[tuple[int | None, str], set[str]]:
    """(scope, name) -> kinds; scope is a function/class node's id, None for the module (and for
    dotted names such as ``self.device``, which are not scoped)."""
    kinds: dict[tuple[int | None, str], set[str]] = {}
    scopes: list[int] = []

    class _Collect(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            scopes.append(id(node))

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            scopes.pop()

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            scopes.append(id(node))

        def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
            scopes.pop()

        def visit_Assign(self, node: cst.Assign) -> None:
            kind = _value_kind(rule, node.value)
            for target in node.targets:
                name = dotted(target.target)
                if name is not None:
                    scope = scopes[-1] if scopes and "." not in name else None
                    kinds.setdefault((scope, name), set()).add(kind)

    visit_original(child_index(rule), rule.context.module, _Collect())
    return kinds


def _get_device_name(rule: Rule, call: cst.Call) -> bool:
    """torch.neuron.get_device_name(device=0): an int or a torch.device; a str or None raises ValueError."""
    arg = _device_arg(call)
    if arg is None or arg.star:
        return True
    return _to_index(rule, arg.value, "get_device_name", "ValueError")


def _set_device(rule: Rule, call: cst.Call) -> bool:
    """torch.neuron.set_device(device): an int or a torch.device; a str raises TypeError."""
    arg = _device_arg(call)
    if arg is None or arg.star:
        return True
    if isinstance(arg.value, cst.Name) and arg.value.value == "None":
        return True  # index None -> the current device on both
    return _to_index(rule, arg.value, "set_device", "TypeError")


def _to_index(rule: Rule, value: cst.BaseExpression, name: str, error: str) -> bool:
    fixed = _index_for(rule, value)
    if fixed is not None:
        new, imports = fixed
        rule.replace(
            value,
            lambda _updated: new,
            f"torch.neuron.{name}() takes an int or a torch.device: {_text(value)} -> {_text(new)}",
            imports=imports,
        )
        return True
    if _holds_int_or_device(rule, value):
        return True
    if (_assigned(rule, value) in ({"string"}, {"string", "device"}) or _assigned_just_before(rule, value) == "string"
            or _known_string(rule, value)):
        # Every value the file gives the name is a device string (or a torch.device):
        # torch.device(x) has the index the CUDA call parsed from it.
        name_ref, imports = torch_ref(rule.context.module)
        wrapped = cst.parse_expression(f"{name_ref}.device({_text(value)})")
        rule.replace(
            value,
            lambda updated: cst.Call(func=cst.parse_expression(f"{name_ref}.device"), args=[cst.Arg(value=_expression(updated))]),
            f"torch.neuron.{name}() takes an int or a torch.device, not a device string: {_text(value)} -> {_text(wrapped)}",
            imports=imports,
        )
        return True
    if name == "get_device_name" or string_value(value) is not None or isinstance(value, cst.FormattedString) or (
        DEVICE_NAME.search((dotted(value) or "").split(".")[-1])
    ):
        rule.mark(
            value,
            f"torch.neuron.{name}() takes an int or a torch.device ({error} for a str"
            + (" or None" if name == "get_device_name" else "")
            + "): pass torch.device(x) or its index",
            code=_MARKER,
        )
    return True


_STRING_METHODS = frozenset({"startswith", "endswith", "split", "rsplit", "partition", "lower", "replace"})


def _known_string(rule: Rule, value: cst.BaseExpression) -> bool:
    """A name that holds a str where it is read: a parameter annotated ``str`` of the enclosing
    function (open_clip's ``set_device(device: str)``), or the receiver of a string method in a
    test guarding the read (``if device.startswith("cuda:"):``)."""
    if not isinstance(value, cst.Name):
        return False
    for ancestor in rule.ancestors(value):
        if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)) and any(
            isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in _STRING_METHODS
            and isinstance(call.func.value, cst.Name) and call.func.value.value == value.value
            for call in child_index(rule).walk(ancestor.test)
        ):
            return True
        if isinstance(ancestor, cst.FunctionDef):
            params = [*ancestor.params.posonly_params, *ancestor.params.params, *ancestor.params.kwonly_params]
            return any(
                p.name.value == value.value and p.annotation is not None
                and isinstance(p.annotation.annotation, cst.Name) and p.annotation.annotation.value == "str"
                for p in params
            )
    return False


def _expression(node: cst.CSTNode) -> cst.BaseExpression:
    assert isinstance(node, cst.BaseExpression)  # the updated form of an argument value
    return node


def _text(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _set_rng_state(rule: Rule, call: cst.Call) -> bool:
    """torch.neuron.set_rng_state(state, device=None): CUDA's new_state= keyword is named state."""
    arg = keyword(call, "new_state")
    if arg is not None:
        rule.replace(arg, lambda n: n.with_changes(keyword=cst.Name("state")), "set_rng_state(new_state=...) -> (state=...): Neuron's parameter name")
    return True


def _device_context(rule: Rule, call: cst.Call) -> bool:
    """torch.neuron.device(device_spec): CUDA's device= keyword does not bind."""
    arg = keyword(call, "device")
    if arg is not None:
        rule.replace(
            arg,
            lambda n: n.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT),
            "torch.neuron.device(device=...) -> device(...): Neuron's parameter is device_spec",
        )
    return True


def _properties(rule: Rule, call: cst.Call) -> bool:
    """Neuron's device properties carry name and total_memory only: reading another attribute fails."""
    read = _attributes_read(rule, call)
    missing = sorted(attr for attr in read if attr not in DEVICE_PROPERTIES)
    if not missing:
        return True
    rule.mark(
        call,
        f"TorchNeuron's device properties carry only name and total_memory: no {', '.join(missing)}; "
        "branch on the device type instead",
        code=_MARKER,
    )
    return False


def _attributes_read(rule: Rule, call: cst.Call) -> set[str]:
    """Attributes read on the call's result: ``f(0).major``, or ``p = f(0)`` then ``p.major`` in the file."""
    parent = rule.parent(call)
    if isinstance(parent, cst.Attribute) and parent.value is call:
        return {parent.attr.value}
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
        return set()
    target = parent.targets[0].target.value
    read: set[str] = set()
    for node in child_index(rule).find(rule.context.module, cst.Attribute):
        assert isinstance(node, cst.Attribute)
        if isinstance(node.value, cst.Name) and node.value.value == target:
            read.add(node.attr.value)
    return read


def port_accelerator_arguments(rule: Rule, node: cst.BaseExpression, head: str) -> None:
    """``--style accelerator``: ``torch.get_device_module().X(...)`` must bind on CUDA and on Neuron.

    Only fixes valid on both are made (an int index for ``get_device_name``, ``set_rng_state``'s
    state passed by position); ``is_bf16_supported(including_emulation=...)`` and properties
    Neuron lacks get a marker (the call stays right on a GPU).
    """
    call = rule.parent(node)
    if not isinstance(call, cst.Call) or call.func is not node:
        return
    if head in _NEURON_TYPED:
        _accelerator_device_string(rule, call, _NEURON_TYPED[head])
    if head in _POSITIONAL_ONLY:
        _positional_device(rule, call, _POSITIONAL_ONLY[head])
    if head == "set_device":
        _accelerator_set_device(rule, call)
    if head == "get_device_name":
        _get_device_name(rule, call)
    elif head == "set_rng_state":
        arg = keyword(call, "new_state")
        if arg is not None and not any(a.keyword is None for a in call.args):
            rule.replace(
                arg,
                lambda n: n.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT),
                "set_rng_state(new_state=...) -> (state, by position): CUDA names it new_state, Neuron state",
            )
    elif head == "is_bf16_supported" and call.args:
        rule.mark(call, "on Neuron is_bf16_supported() takes no arguments (TypeError); it is always True there", code=_MARKER)
    elif head == "get_device_properties":
        _properties(rule, call)


_FIXES = {
    "Stream": _stream,
    "Event": _event,
    "is_bf16_supported": _bf16,
    "get_device_name": _get_device_name,
    "set_device": _set_device,
    "set_rng_state": _set_rng_state,
    "device": _device_context,
    "get_device_properties": _properties,
}
