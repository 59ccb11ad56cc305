"""Shared knowledge about device strings and device-typed expressions (no rule lives here).

What each device idiom becomes (default style → ``--style accelerator``), torch 2.13 names:

===============================================  ==================================  ============================================================
idiom                                            default (``neuron``)                ``--style accelerator``
===============================================  ==================================  ============================================================
``"cuda"`` / ``"cuda:1"`` / ``f"cuda:{r}"``      ``"neuron"`` / ``"neuron:1"`` ...   ``torch.accelerator.current_accelerator().type`` (+ ``:idx``)
``device.type == "cuda"``, ``"cuda" in dev``     ``== "neuron"``, ``"neuron" in``    ``!= "cpu"``, ``"cpu" not in dev``
``x.is_cuda``                                    ``x.device.type == "neuron"``       ``x.device.type != "cpu"``
``x.cuda()`` / ``x.cuda(i)``                     ``.to("neuron")`` / ``f"neuron:{i}"`` ``.to(torch.accelerator.current_accelerator())`` / ``.to(i)``
``x.to(local_rank)``                             ``.to(f"neuron:{local_rank}")``     unchanged (an int is an index of the current accelerator)
``map_location=lambda s, l: s.cuda(i)``          ``map_location=f"neuron:{i}"``      ``map_location=torch.device(i)``
``torch.cuda.X`` (table)                         ``torch.neuron.X``                  ``torch.accelerator.Y`` / ``torch.Stream`` / ``torch.manual_seed``
                                                                                     / ``torch.get_device_module().X``
``set_default_tensor_type(cuda.FloatTensor)``    ``set_default_device("neuron")``    ``set_default_device(torch.accelerator.current_accelerator())``
``custom_fwd`` (``torch.cuda.amp``)              ``device_type="neuron"``            ``device_type=getattr(current_accelerator(), "type", "cpu")``
backend ``"nccl"``                               ``"neuron"``                        ``get_default_backend_for_device(current_accelerator() or "cpu")``
cuDNN / TF32 switches                            removed                             kept (inert off CUDA, still useful on a GPU)
``xm.xla_device()``                              ``torch.device("neuron")``          ``torch.accelerator.current_accelerator()``
===============================================  ==================================  ============================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst

from porter.engine.changes import ImportSpec
from porter.engine.fastcst.walk import TreeIndex
from porter.engine.imported import imported_module
from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.imports import torch_alias
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.tree import child_index

CUDA_DEVICE = re.compile(r"^cuda(:\d+)?$")
# Names that hold a device (or a device type): device, DEVICE, self.device, device_type, train_dev ...
DEVICE_NAME = re.compile(r"(?i)(^|_)(device|devices|dev|device_type|map_location|accelerator)(_|$)")
DEVICE_KEYWORDS = frozenset({"device", "map_location", "device_type", "default_device", "devices"})


def cuda_string(node: cst.CSTNode) -> bool:
    """A literal ``"cuda"``/``"cuda:N"`` or an f-string ``f"cuda:{...}"``."""
    value = string_value(node)
    if value is not None:
        return bool(CUDA_DEVICE.match(value))
    if isinstance(node, cst.FormattedString) and node.parts:
        first = node.parts[0]
        if isinstance(first, cst.FormattedStringText):
            if first.value == "cuda:" and len(node.parts) >= 2:
                return True
            if first.value == "cuda" and len(node.parts) == 1:
                return True
    return False


def profiler_activity(rule: Rule, node: cst.CSTNode) -> bool:
    """``node`` is (an element of) the value of an ``activities=`` keyword: a profiler activity, not a device.

    Heuristic: any call's ``activities`` keyword (torch.profiler's and the wrappers libraries give it,
    e.g. a collector's ``enable_profile``) names what to record ("cpu", "cuda"); walking up from the
    string through lists, tuples, sets and conditional choices only, never into another call.
    """
    child: cst.CSTNode = node
    current: cst.CSTNode | None = rule.parent(node)
    while isinstance(current, (cst.Element, cst.List, cst.Tuple, cst.Set, cst.IfExp)):
        if isinstance(current, cst.IfExp) and current.test is child:
            return False  # the choice's test compares a device
        child, current = current, rule.parent(current)
    return isinstance(current, cst.Arg) and current.keyword is not None and current.keyword.value == "activities"


def neuron_string(node: cst.BaseExpression) -> cst.BaseExpression:
    """The ``neuron`` spelling of a CUDA device string node (quotes and prefix kept)."""
    if isinstance(node, cst.SimpleString):
        old = node.value
        index = old.index("cuda")
        return node.with_changes(value=old[:index] + "neuron" + old[index + 4 :])
    if isinstance(node, cst.FormattedString):
        first = node.parts[0]
        assert isinstance(first, cst.FormattedStringText)
        return node.with_changes(parts=[first.with_changes(value="neuron" + first.value[4:]), *node.parts[1:]])
    return node


def device_named(node: cst.CSTNode) -> bool:
    """An expression whose name says it holds a device: ``device``, ``self.device``, ``x.device.type``."""
    if isinstance(node, cst.Call) and dotted(node.func) in {"str", "repr"} and node.args:
        return device_named(node.args[0].value)
    if isinstance(node, cst.Subscript):  # batch["device"], cfg.devices[0]
        return device_named(node.value)
    text = dotted(node)
    if text is None:
        return False
    parts = text.split(".")
    if parts[-1] == "type" and len(parts) > 1:
        return True
    return bool(DEVICE_NAME.search(parts[-1]))


# ---------------------------------------------------------------- added for the NRN1xx/NRN3xx rules
import libcst.matchers as _m  # noqa: E402  (kept next to the helpers that use it)

from porter.rules._lib.args import keyword as _keyword  # noqa: E402
from porter.rules._lib.args import positional as _positional  # noqa: E402

# --style accelerator: the device-generic spelling of the device type ("cuda" -> this expression).
ACCELERATOR_TYPE = "torch.accelerator.current_accelerator().type"
# The same where no availability test guards it: current_accelerator() is None on a CPU-only host,
# where the original's "cuda" is kept (a GradScaler("cuda") there disables itself, as before; a
# set of device types keeps meaning what it did).
ACCELERATOR_TYPE_OR_CUDA = 'getattr(torch.accelerator.current_accelerator(), "type", "cuda")'

# "cuda:{}".format(i) / "cuda:%d" % i templates: unambiguous device spellings wherever they appear.
CUDA_TEMPLATE = re.compile(r"^cuda:(\{\}|\{0\}|\{[a-z_]\w*\}|%d|%s|%i)$")

# Names that conventionally hold an integer device index (a local rank or a GPU number).
INT_DEVICE_NAME = re.compile(
    r"(?i)^(local_rank|ddp_local_rank|rank|gpu|gpu_id|gpu_idx|gpu_index|device_id|device_idx|"
    r"device_index|local_gpu|gpu_rank|local_device)$"
)


def accelerator_string(node: cst.BaseExpression, torch_name: str = "torch", kind_text: str = ACCELERATOR_TYPE) -> cst.BaseExpression:
    """The ``--style accelerator`` spelling of a CUDA device string node.

    ``"cuda"`` -> ``torch.accelerator.current_accelerator().type``; ``"cuda:1"`` ->
    ``f"{torch.accelerator.current_accelerator().type}:1"``; ``f"cuda:{r}"`` likewise.
    ``kind_text``: the device-type expression (``ACCELERATOR_TYPE_OR_CUDA`` where the value is
    read on every host, a CPU-only one included).
    """
    kind = retorch(kind_text, torch_name)
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        assert isinstance(value, str)
        if value == "cuda":
            return cst.parse_expression(kind)
        quote = '"' if "'" in node.quote or '"' not in value else "'"
        inner = kind.replace(quote, "'" if quote == '"' else '"')  # no nested f-string quotes before 3.12
        return cst.parse_expression(f"f{quote}{{{inner}}}{value[4:]}{quote}")
    if isinstance(node, cst.FormattedString):
        first = node.parts[0]
        assert isinstance(first, cst.FormattedStringText)
        quote = node.start[-1]
        head = cst.FormattedStringExpression(expression=cst.parse_expression(kind.replace(quote, "'" if quote == '"' else '"')))
        rest = [first.with_changes(value=first.value[4:])] if first.value[4:] else []
        return node.with_changes(parts=[head, *rest, *node.parts[1:]])
    return node


def map_location_cuda_call(lam: cst.Lambda) -> cst.Call | None:
    """For ``lambda storage, loc: storage.cuda(...)``, the ``.cuda(...)`` call; else None."""
    params = lam.params.params
    body = lam.body
    if not params or not isinstance(body, cst.Call) or not isinstance(body.func, cst.Attribute):
        return None
    if body.func.attr.value != "cuda" or not _m.matches(body.func.value, _m.Name(params[0].name.value)):
        return None
    if any(arg.star or (arg.keyword is not None and arg.keyword.value != "device") for arg in body.args):
        return None
    return body


def cuda_call_index(call: cst.Call) -> cst.BaseExpression | None:
    """The device index given to ``x.cuda(i)`` / ``x.cuda(device=i)``, if any."""
    arg = _positional(call, 0) or _keyword(call, "device")
    return arg.value if arg is not None else None


def torch_import(module: cst.Module) -> tuple[ImportSpec, ...]:
    """``(ImportSpec("torch"),)`` when the file lacks a plain top-level ``import torch``, else ``()``.

    Asking for an import the file already has is harmless, but the engine sorts the needed
    imports and a bare spec next to another rule's ``from torch import x`` spec cannot be
    ordered (None < str); not asking avoids that in the common case.
    """
    return () if torch_alias(module) == "torch" else (ImportSpec("torch"),)


def torch_ref(module: cst.Module) -> tuple[str, tuple[ImportSpec, ...]]:
    """How generated code names the torch module here: ``("th", ())`` after ``import torch as th``,
    ``("torch", ())`` after ``import torch``, else ``("torch", (ImportSpec("torch"),))``."""
    alias = torch_alias(module)
    return (alias, ()) if alias else ("torch", (ImportSpec("torch"),))


def retorch(text: str, name: str) -> str:
    """Generated source ``text`` with its ``torch.`` references spelled ``name.``."""
    return text if name == "torch" else re.sub(r"\btorch\.", f"{name}.", text)


# Library callees that take any torch device (or device type) at a positional index, by qualified
# name -> index (torch 2.13 signatures, read here with inspect.signature; safetensors 0.x:
# ``load_file(filename, device="cpu")``). Keywords are DEVICE_KEYWORDS' (map_location, device, device_type).
DEVICE_POSITIONS: dict[str, int] = {
    "torch.load": 1,  # load(f, map_location=None, pickle_module=None, *, ...)
    "torch.serialization.load": 1,
    "torch.jit.load": 1,  # load(f, map_location=None, _extra_files=None, ...)
    "torch.hub.load_state_dict_from_url": 2,  # (url, model_dir=None, map_location=None, ...)
    "torch.utils.model_zoo.load_url": 2,
    "safetensors.torch.load_file": 1,
    "torch.distributed.device_mesh.DeviceMesh": 0,  # DeviceMesh(device_type, mesh=None, *, ...)
    "torch.distributed.tensor.DeviceMesh": 0,
    "torch.amp.is_autocast_available": 0,  # is_autocast_available(device_type)
    "torch.amp.autocast_mode.is_autocast_available": 0,
}


@dataclass(frozen=True)
class _Signature:
    positional: tuple[str, ...]  # positional parameters, ``self``/``cls`` dropped for methods and classes
    keywords: frozenset[str]  # every parameter that can be passed by name
    devices: frozenset[str]  # parameters the body uses as a device as they are (see _device_uses)


@dataclass(frozen=True)
class LocalCallees(FileAnalysis):
    """The signatures of the functions and classes this file defines, for resolving a call's
    argument to the parameter it binds: a function name defined once in the file (at any depth,
    not as a method), a class defined once at module level (its ``__init__``), and
    ``self.method(...)`` inside the class defining ``method``. A name defined twice is not resolved."""

    functions: Mapping[str, _Signature]
    methods: Mapping[tuple[str, str], _Signature]  # (class, method)

    @classmethod
    def compute(cls, rule: Rule) -> LocalCallees:
        functions: dict[str, _Signature | None] = {}
        methods: dict[tuple[str, str], _Signature | None] = {}
        module = rule.context.module
        for node in child_index(rule).preorder:
            if isinstance(node, cst.ClassDef):
                for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                    if isinstance(statement, cst.FunctionDef):
                        key = (node.name.value, statement.name.value)
                        methods[key] = None if key in methods else _signature(child_index(rule), statement, bound=True)
                        if statement.name.value == "__init__" and rule.parent(node) is module:
                            name = node.name.value
                            functions[name] = None if name in functions else methods[key]
            elif isinstance(node, cst.FunctionDef) and not isinstance(_owner(rule, node), cst.ClassDef):
                name = node.name.value
                functions[name] = None if name in functions else _signature(child_index(rule), node, bound=False)
        return cls(
            {k: v for k, v in functions.items() if v is not None},
            {k: v for k, v in methods.items() if v is not None},
        )

    def parameter(self, rule: Rule, call: cst.Call, arg: cst.Arg) -> str | None:
        """The parameter of a function or class of this file that ``arg`` binds, when its body uses
        it as a device as it is (``.to(p)``, ``device=p``, ``torch.device(p)``, ``self.x_device = p``,
        a device-named keyword of another call), else None: a parameter only inspected
        (``getattr(device, "type", ...)`` to pick a device module) is not a device to port."""
        signature: _Signature | None = None
        func = call.func
        if isinstance(func, cst.Name):
            signature = self.functions.get(func.value)
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            owner = next((a for a in rule.ancestors(call) if isinstance(a, cst.ClassDef)), None)
            signature = self.methods.get((owner.name.value, func.attr.value)) if owner is not None else None
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            made = _constructed_as(rule, call, func.value.value)
            signature = self.methods.get((made, func.attr.value)) if made is not None else None
        if signature is None and isinstance(func, (cst.Name, cst.Attribute)):
            signature = rule.analysis(ImportedCallees).signature(rule, func)
        if signature is None or arg.star:
            return None
        if arg.keyword is not None:
            name: str | None = arg.keyword.value if arg.keyword.value in signature.keywords else None
        elif any(a.star for a in call.args[: call.args.index(arg)]):
            return None  # f(*xs, "cuda"): the index is not known
        else:
            index = [a for a in call.args if a.keyword is None and not a.star].index(arg)
            name = signature.positional[index] if index < len(signature.positional) else None
        return name if name in signature.devices else None


@dataclass(frozen=True)
class ImportedCallees(FileAnalysis):
    """The signatures of the functions and classes defined at module level in the project modules
    this file imports (``from helpers import make_agent``, ``import utils`` then
    ``utils.make_agent(...)``, ``from .env import Worker``), read through the engine
    (``porter.engine.imported``: the runner lists them, with their digests, in ``Options.imports``).
    A callee is resolved by its qualified name: the module part names the module, the last part a
    function (or a class, by its ``__init__``) that module defines once at its top level."""

    modules: dict[tuple[str, str], _Signature | None]  # (module, name) asked -> its signature
    trees: dict[int, tuple[cst.Module, Mapping[str, _Signature]]]  # id of a module's tree -> (it, its signatures)

    @classmethod
    def compute(cls, rule: Rule) -> ImportedCallees:
        return cls({}, {})

    def signature(self, rule: Rule, func: cst.BaseExpression) -> _Signature | None:
        if not rule.options.imports:
            return None
        found = {self._of(rule, module, attr) for module, attr in map(_module_and_name, rule.qualified(func)) if module}
        found.discard(None)
        return found.pop() if len(found) == 1 else None

    def _of(self, rule: Rule, module: str, name: str) -> _Signature | None:
        key = (module, name)
        if key not in self.modules:
            tree = imported_module(rule.options, module, defining=name)
            if tree is not None and id(tree) not in self.trees:
                self.trees[id(tree)] = (tree, _top_level_signatures(tree))  # the tree held: its id stays its own
            self.modules[key] = self.trees[id(tree)][1].get(name) if tree is not None else None
        return self.modules[key]


def _module_and_name(qualified: str) -> tuple[str, str]:
    """``.helpers.f`` -> (``.helpers``, ``f``); ``..f`` -> (``..``, ``f``); ``f`` -> ("", ``f``)."""
    dots = len(qualified) - len(qualified.lstrip("."))
    module, _, name = qualified[dots:].rpartition(".")
    return "." * dots + module, name


def _top_level_signatures(module: cst.Module) -> Mapping[str, _Signature]:
    """A module's functions and classes (by ``__init__``) defined once at its top level."""
    index = TreeIndex(module)
    found: dict[str, _Signature | None] = {}
    for statement in module.body:
        signature: _Signature | None = None
        if isinstance(statement, cst.FunctionDef):
            signature = _signature(index, statement, bound=False)
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            init = [s for s in statement.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"]
            signature = _signature(index, init[0], bound=True) if len(init) == 1 else None
        else:
            continue
        name = statement.name.value
        found[name] = None if name in found else signature
    return {name: signature for name, signature in found.items() if signature is not None}


def _constructed_as(rule: Rule, node: cst.CSTNode, name: str) -> str | None:
    """The class every assignment of ``name`` in the function (or module) holding ``node`` calls
    (``buffer = ReplayBuffer(...)``), or None when one assigns anything else."""
    scope = next((a for a in rule.ancestors(node) if isinstance(a, cst.FunctionDef)), rule.context.module)
    made: set[str] = set()
    for inner in child_index(rule).walk(scope):
        if isinstance(inner, (cst.AugAssign, cst.AnnAssign, cst.For, cst.With, cst.NamedExpr)):
            target = getattr(inner, "target", None)
            if isinstance(target, cst.Name) and target.value == name:
                return None
        if not isinstance(inner, cst.Assign) or not any(isinstance(t.target, cst.Name) and t.target.value == name for t in inner.targets):
            continue
        if len(inner.targets) != 1 or not (isinstance(inner.value, cst.Call) and isinstance(inner.value.func, cst.Name)):
            return None
        made.add(inner.value.func.value)
    return made.pop() if len(made) == 1 else None


def _owner(rule: Rule, node: cst.CSTNode) -> cst.CSTNode | None:
    """The class or function whose body defines ``node`` (None at module level)."""
    return next((a for a in rule.ancestors(node) if isinstance(a, (cst.ClassDef, cst.FunctionDef))), None)


def _signature(index: TreeIndex, function: cst.FunctionDef, bound: bool) -> _Signature:
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if bound and positional and not any(_static(d) for d in function.decorators):
        positional = positional[1:]
    keywords = frozenset(p.name.value for p in (*params.params, *params.kwonly_params))
    return _Signature(tuple(positional), keywords, _device_uses(index, function, {*positional, *keywords}))


def _device_uses(index: TreeIndex, function: cst.FunctionDef, names: set[str]) -> frozenset[str]:
    """The parameters in ``names`` the body uses, as they are, in a device position: the first
    argument of ``.to()``/``torch.device()``, a device-named keyword (``device=``, ``storing_device=``),
    or the value assigned to a device-named name or attribute."""
    used: set[str] = set()
    for inner in index.walk(function.body):
        if isinstance(inner, cst.Arg) and isinstance(inner.value, cst.Name) and inner.value.value in names:
            call = index.parents.get(inner)
            if inner.keyword is not None:
                if DEVICE_NAME.search(inner.keyword.value):
                    used.add(inner.value.value)
            elif isinstance(call, cst.Call) and call.args and call.args[0] is inner:
                method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
                if method == "to" or (dotted(call.func) or "").endswith("torch.device"):
                    used.add(inner.value.value)
        elif isinstance(inner, cst.Assign) and isinstance(inner.value, cst.Name) and inner.value.value in names:
            if any(device_named(target.target) for target in inner.targets):
                used.add(inner.value.value)
    return frozenset(used)


def _static(decorator: cst.Decorator) -> bool:
    return dotted(decorator.decorator) == "staticmethod"
