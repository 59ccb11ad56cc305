"""Shared knowledge of the mixed-precision rules (NRN201-NRN207); no rule lives here.

The GradScaler rule may drop the scaler only when every reduced-precision (float16) source of the
file is ported to bfloat16 by the autocast rule (NRN201) or the fp16 rule (NRN203). Both of those
rules and the scaler rule therefore classify the same nodes with the functions below, and the
per-file inventory of float16 sources is computed once and kept in ``FileContext.notes``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import libcst as cst

from porter.engine.changes import ImportSpec
from porter.engine.fastcst.walk import TreeIndex
from porter.engine.rule import FileAnalysis, Rule
from porter.rules._lib.args import positional
from porter.rules._lib.device import ACCELERATOR_TYPE_OR_CUDA
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.tree import child_index, visit_original

Qualify = Callable[[cst.CSTNode], set[str]]

# Callables that build an autocast context (the device-generic class and its CUDA shortcut).
AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
CUDA_AUTOCAST = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
PARTIAL = frozenset({"functools.partial"})
GRAD_SCALER = frozenset(
    {
        "torch.cuda.amp.GradScaler",
        "torch.cuda.amp.grad_scaler.GradScaler",
        "torch.amp.GradScaler",
        "torch.amp.grad_scaler.GradScaler",
        "torch.GradScaler",  # the same class (torch >= 2.3)
        # FSDP's (composer, torchtitan): torch.amp.GradScaler's signature, device first, "cuda" default
        "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
    }
)
# Loss-scaler wrapper classes of timm (DeiT, MAE and BEiT import them): they own a GradScaler('cuda').
SCALER_WRAPPERS = frozenset(
    {"timm.utils.NativeScaler", "timm.utils.cuda.NativeScaler", "timm.utils.ApexScaler", "timm.utils.cuda.ApexScaler"}
)
FP16_DTYPES = frozenset({"torch.float16", "torch.half"})
KEPT_DTYPES = frozenset({"torch.bfloat16", "torch.float32", "torch.float"})
# Legacy half tensor types: float16 data the port cannot make bfloat16 (owned by the NRN1xx rules).
HALF_TENSOR_TYPES = frozenset({"torch.HalfTensor", "torch.cuda.HalfTensor"})
# Variables whose string value names a torch dtype ("float16" -> "bfloat16" is a valid swap there).
DTYPE_NAME = re.compile(r"(?i)(^|_)(dtype|ptdtype|amp_dtype|autocast_dtype)(_|$)|dtype$")
# --style accelerator: the device-generic device type (the same spelling the NRN1xx rules use).
ACCELERATOR_DEVICE_TYPE = "torch.accelerator.current_accelerator().type"
ACCELERATOR_DEVICE_TYPE_OR_CUDA = ACCELERATOR_TYPE_OR_CUDA  # see rules/_lib/device.py

# Codes of the rules that port each kind of float16 source (see rules/autocast.py, rules/half_precision.py).
AUTOCAST_CODE = "NRN201"
FP16_CODE = "NRN203"
CUDA_TENSOR_TYPES_CODE = "NRN107"  # rules/cuda_tensor_types.py (device rules)


@dataclass(frozen=True)
class Fp16Source:
    """One place that makes float16 values: made bfloat16 when all of ``codes`` run (empty: never)."""

    line: int
    what: str
    codes: tuple[str, ...]
    # where it is (the scaler rule gives each GradScaler the sources of its own code)
    node: cst.CSTNode | None = field(default=None, compare=False, hash=False, repr=False)


@dataclass
class Inventory(FileAnalysis):
    """Every float16 source of the file (computed once: ``rule.analysis(Inventory)``)."""

    sources: list[Fp16Source] = field(default_factory=list)

    @classmethod
    def compute(cls, rule: Rule) -> Inventory:
        return inventory(
            rule.context.module, rule.qualified, rule.parent, lambda n: rule.position(n)[0], rule.context.text, child_index(rule),
            keeps_fp16=rule.options.style == "accelerator",
        )

    def blockers(self, selected: Callable[[str], bool]) -> list[Fp16Source]:
        """Sources that will still make float16 after the port under the current code selection."""
        return [source for source in self.sources if not source.codes or not all(map(selected, source.codes))]


# ----------------------------------------------------------------------------- autocast forms
@dataclass(frozen=True)
class AutocastArgs:
    """The arguments of an autocast construction, by parameter name (``None``: not given)."""

    cuda_form: bool  # torch.cuda.amp.autocast(enabled, dtype, cache_enabled)
    device: cst.BaseExpression | None
    dtype: cst.BaseExpression | None
    others: tuple[cst.Arg, ...]  # enabled= / cache_enabled=, as keywords, in the original order
    unsupported: bool  # *args/**kwargs or unknown keywords: not rewritable


_CUDA_ORDER = ("enabled", "dtype", "cache_enabled")
_GENERIC_ORDER = ("device_type", "dtype", "enabled", "cache_enabled")


def autocast_args(args: Sequence[cst.Arg], cuda_form: bool) -> AutocastArgs:
    """Map the (positional and keyword) arguments of an autocast call to parameter names."""
    order = _CUDA_ORDER if cuda_form else _GENERIC_ORDER
    named: dict[str, cst.Arg] = {}
    unsupported = False
    position = 0
    for arg in args:
        if arg.star:
            unsupported = True
        elif arg.keyword is None:
            if position >= len(order):
                unsupported = True
            else:
                named[order[position]] = arg
            position += 1
        elif arg.keyword.value in order:
            named[arg.keyword.value] = arg
        else:
            unsupported = True
    others = tuple(
        _as_keyword(arg, name) for name, arg in named.items() if name in {"enabled", "cache_enabled"}
    )
    device = named.get("device_type")
    dtype = named.get("dtype")
    return AutocastArgs(
        cuda_form=cuda_form,
        device=device.value if device else None,
        dtype=dtype.value if dtype else None,
        others=others,
        unsupported=unsupported,
    )


def _as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    if arg.keyword is not None:
        return arg
    return arg.with_changes(
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def device_kind(node: cst.BaseExpression | None) -> str:
    """``cuda`` / ``neuron`` / ``xla`` / ``other`` (a literal for another device) / ``variable`` / ``missing``."""
    if node is None:
        return "missing"
    value = string_value(node)
    if value is None:
        return "variable"
    if re.match(r"^cuda(:\d+)?$", value):
        return "cuda"
    if value == "neuron":
        return "neuron"
    if value == "xla":
        return "xla"  # torch-xla's device: the XLA rule (NRN8xx) makes it "neuron"
    return "other"


def built_at_import(rule: Rule, node: cst.CSTNode) -> bool:
    """Whether ``node`` runs when the module is imported: not inside a function body (a
    decorator, a module-level ``with`` or object, a class body)."""
    child = node
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)) and child is ancestor.body:
            return False
        child = ancestor
    return True


def autocast_ports_device(rule: Rule, node: cst.BaseExpression) -> bool:
    """Whether NRN201 ports the CUDA device string ``node`` itself, with its CPU fallback: the
    device of a ``torch.autocast`` built at import time, or the ``"cuda"`` default of a parameter
    that an autocast in that function takes as its device (rules/autocast.py). NRN101 leaves
    those strings to it: rule by rule NRN201 would otherwise see an explicit ``"neuron"`` there
    and keep it, and one pass and the rules one by one must give the same program."""
    if device_kind(node) != "cuda":
        return False
    parent = rule.parent(node)
    if isinstance(parent, cst.Param) and parent.default is node:
        function = next((a for a in rule.ancestors(parent) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
        if function is None or not any(parent is p for p in (*function.params.params, *function.params.kwonly_params)):
            return False  # NRN201 follows positional-or-keyword and keyword-only parameters
        for inner in child_index(rule).walk(function.body):
            if isinstance(inner, cst.Call) and rule.matches(inner.func, *AUTOCAST):
                device = autocast_args(inner.args, False).device
                nearest = next((a for a in rule.ancestors(inner) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
                if isinstance(device, cst.Name) and device.value == parent.name.value and nearest is function:
                    return True
        return False
    call = rule.parent(parent) if isinstance(parent, cst.Arg) else None
    if not isinstance(call, cst.Call) or not rule.matches(call.func, *AUTOCAST):
        return False
    args = autocast_args(call.args, False)
    return not args.unsupported and args.device is node and built_at_import(rule, call)


def dtype_kind(node: cst.BaseExpression | None, qualify: Qualify, bound: Bindings) -> str:
    """``missing`` / ``fp16`` / ``kept`` (bf16, fp32, or a variable this file sets to dtypes it
    names) / ``unknown`` (a value from outside the file: ``amp_dtype = args.amp_dtype``)."""
    if node is None:
        return "missing"
    names = qualify(node)
    if names & FP16_DTYPES:
        return "fp16"
    if names & KEPT_DTYPES:
        return "kept"
    if isinstance(node, (cst.Name, cst.Attribute)) and dotted(node) in bound and _resolved(node, qualify, bound, 4):
        return "kept"  # its value is ported (or kept, and marked) where it is computed
    return "unknown"


def _resolved(node: cst.BaseExpression, qualify: Qualify, bound: Bindings, depth: int) -> bool:
    """Whether every value ``node`` can take is a dtype (or dtype name) written in this file."""
    if depth <= 0:
        return False
    if qualify(node) & (FP16_DTYPES | KEPT_DTYPES) or string_value(node) is not None:
        return True
    if isinstance(node, cst.Name) and node.value == "None":
        return True  # autocast's own default dtype, the same before and after the port
    if isinstance(node, cst.IfExp):
        return _resolved(node.body, qualify, bound, depth - 1) and _resolved(node.orelse, qualify, bound, depth - 1)
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Dict):  # {"float16": torch.float16, ...}[dtype]
        return all(
            isinstance(e, cst.DictElement) and _resolved(e.value, qualify, bound, depth - 1) for e in node.value.elements
        )
    if isinstance(node, cst.Call) and dotted(node.func) == "getattr" and len(node.args) == 2:
        return "torch" in qualify(node.args[0].value) and _resolved(node.args[1].value, qualify, bound, depth - 1)
    if isinstance(node, (cst.Name, cst.Attribute)):
        values = bound.get(dotted(node) or "") or []
        return bool(values) and all(v is not None and _resolved(v, qualify, bound, depth - 1) for v in values)
    return False


def file_mentions_accelerator(text: str) -> bool:
    """A variable device type in autocast is taken to be the CUDA/Neuron device only in such files
    (``current_accelerator``: the device as ``--style accelerator`` ports "cuda", so a file the
    device rules ported first still counts)."""
    return "cuda" in text or "neuron" in text or "current_accelerator" in text


# ----------------------------------------------------------------------------- the inventory
# What the file assigns to each name it binds (None: a parameter, loop target or import: any value).
Bindings = dict[str, list[cst.BaseExpression | None]]


def bound_names(module: cst.Module, index: TreeIndex | None = None) -> Bindings:
    """Every name the file binds (``x``, ``self.x``: assignments, parameters, loop targets,
    imports), with the values assigned to it."""
    collector = _Binder()
    visit_original(index, module, collector)
    return collector.names


class _Binder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: Bindings = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._targets(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target, None)

    def visit_Param(self, node: cst.Param) -> None:
        self.names.setdefault(node.name.value, []).append(None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target, node.value)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is not None and isinstance(node.asname.name, cst.Name):
            self.names.setdefault(node.asname.name.value, []).append(None)
        else:
            text = dotted(node.name)
            if text:
                self.names.setdefault(text.split(".")[0], []).append(None)

    def _targets(self, target: cst.CSTNode, value: cst.BaseExpression | None) -> None:
        if isinstance(target, (cst.Name, cst.Attribute)):
            text = dotted(target)  # self.ptdtype = ... binds "self.ptdtype"
            if text:
                self.names.setdefault(text, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._targets(element.value, None)


def in_comparison(node: cst.CSTNode, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None]) -> bool:
    """Whether ``node`` is compared (``x.dtype == torch.float16``, ``dt in (torch.half, ...)``): a
    selector, not a producer of float16 values, so it is never rewritten."""
    parent = parent_of(node)
    if isinstance(parent, cst.Element):
        container = parent_of(parent)
        parent = parent_of(container) if container is not None else None
    return isinstance(parent, (cst.Comparison, cst.ComparisonTarget))


_FP16_WORD = re.compile(r"(?i)(^|_)(fp16|float16|half)($|_)")


def _names_fp16(node: cst.BaseExpression, qualify: Qualify, bound: Bindings) -> bool:
    """``node`` reads a float16 option from outside the file: a value compared with a
    ``"fp16"``-like string or ``torch.float16`` (``precision == "fp16"``), or a name such as
    ``args.fp16``. A variable this file sets to dtype names (nanoGPT's ``dtype``) is not one:
    its float16 value is in the inventory already, and is ported or marked there."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Comparison):
            parts = _compared(current)
            if any(string_value(part) in _FP16_LABELS or qualify(part) & FP16_DTYPES for part in parts):
                others = [p for p in parts if string_value(p) is None and not qualify(p) & (FP16_DTYPES | KEPT_DTYPES)]
                if any(not _resolved(p, qualify, bound, 4) for p in others):
                    return True
            continue
        if isinstance(current, (cst.Name, cst.Attribute)):
            last = current.value if isinstance(current, cst.Name) else current.attr.value
            if _FP16_WORD.search(last) and not _resolved(current, qualify, bound, 4):
                return True
            if isinstance(current, cst.Attribute):
                continue
        stack.extend(current.children)
    return False


_OTHER_DTYPES = frozenset({"torch.bfloat16", "torch.float32", "torch.float", "torch.float64", "torch.double"})


def in_dtype_list(node: cst.CSTNode, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None], qualify: Qualify) -> bool:
    """Whether ``node`` is one element of a list/tuple/set literal that names other dtypes too
    (``valid = (torch.float16, torch.bfloat16, torch.float32)``, deepspeed's bucket dtypes): a
    table of supported dtypes, which bfloat16 in place of float16 would only duplicate."""
    element = parent_of(node)
    container = parent_of(element) if isinstance(element, cst.Element) else None
    if not isinstance(container, (cst.List, cst.Tuple, cst.Set)):
        return False
    return any(qualify(other.value) & _OTHER_DTYPES for other in container.elements if other is not element)


def inventory(
    module: cst.Module,
    qualify: Qualify,
    parent_of: Callable[[cst.CSTNode], cst.CSTNode | None],
    line_of: Callable[[cst.CSTNode], int],
    text: str,
    index: TreeIndex | None = None,
    *,
    keeps_fp16: bool = False,
) -> Inventory:
    """Every float16 source of the file, with the rule that ports it (None: not portable).
    ``keeps_fp16``: the accelerator style, where NRN201 and NRN203 keep float16 (the CUDA
    program stays as it was), so no rule removes it."""
    finder = _Fp16Finder(qualify, parent_of, line_of, bound_names(module, index), file_mentions_accelerator(text))
    finder.autocast_code = None if keeps_fp16 else AUTOCAST_CODE
    finder.fp16_code = None if keeps_fp16 else FP16_CODE
    finder.code_of = module.code_for_node
    # No torch autocast named in this file: its precision is chosen elsewhere (a get_autocast(...)
    # helper, or a project function that is itself called ``autocast``: matched by qualified name).
    finder.autocast_elsewhere = not _names_torch_autocast(index or TreeIndex(module), qualify)
    visit_original(index, module, finder)
    return Inventory(finder.sources + finder.option_sources)


def _names_torch_autocast(index: TreeIndex, qualify: Qualify) -> bool:
    """Whether the file refers to torch's autocast (called, or handed to ``functools.partial``)."""
    for node in index.preorder:
        tail = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else None
        if tail == "autocast" and qualify(node) & (AUTOCAST | CUDA_AUTOCAST):
            return True
    return False


class _Fp16Finder(cst.CSTVisitor):
    def __init__(
        self,
        qualify: Qualify,
        parent_of: Callable[[cst.CSTNode], cst.CSTNode | None],
        line_of: Callable[[cst.CSTNode], int],
        bound: Bindings,
        accelerator_file: bool,
    ) -> None:
        super().__init__()
        self.qualify = qualify
        self.parent_of = parent_of
        self.line_of = line_of
        self.bound = bound
        self.accelerator_file = accelerator_file
        self.autocast_code: str | None = AUTOCAST_CODE  # the rule that makes an autocast's float16 bfloat16
        self.fp16_code: str | None = FP16_CODE  # ... and other float16 choices
        self.sources: list[Fp16Source] = []
        self.option_sources: list[Fp16Source] = []  # float16 named by a user's option string
        self.code_of: Callable[[cst.CSTNode], str] = lambda n: ""
        self.autocast_elsewhere = False  # no autocast in this file: its precision is chosen in another

    def _add(self, node: cst.CSTNode, what: str, *codes: str | None) -> None:
        self.sources.append(Fp16Source(self.line_of(node), what, tuple(c for c in codes if c), node))

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._dtype_ref(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._dtype_ref(node)

    def _dtype_ref(self, node: cst.Attribute | cst.Name) -> None:
        parent = self.parent_of(node)
        if isinstance(parent, cst.Attribute) and (parent.attr is node or parent.value is node):
            return  # only whole dotted chains
        names = self.qualify(node)
        if names & FP16_DTYPES and not in_comparison(node, self.parent_of) and not in_dtype_list(node, self.parent_of, self.qualify):
            chosen = explicit_choice(node, self.parent_of, self.qualify, self.code_of)
            if chosen is not None:
                self._add(node, f"torch.float16 chosen by {chosen}", None)
                return
            owner = self.autocast_code if autocast_dtype_argument(node, self.parent_of, self.qualify) else self.fp16_code
            self._add(node, "torch.float16", owner)
        elif names & HALF_TENSOR_TYPES:
            # NRN107 turns torch.cuda.HalfTensor(...) / .type(torch.cuda.HalfTensor) into calls
            # with dtype=torch.float16, which the fp16 rule then makes bfloat16 (same call node).
            ported = "torch.cuda.HalfTensor" in names and half_tensor_call(node, self.parent_of) is not None
            self._add(node, "a HalfTensor type", *((CUDA_TENSOR_TYPES_CODE, self.fp16_code) if ported and self.fp16_code else (None,)))
        elif names & CUDA_AUTOCAST and not isinstance(parent, cst.Call):
            if not (isinstance(parent, cst.Arg) and _partial_of(parent, self.parent_of, self.qualify)):
                self._add(node, "torch.cuda.amp.autocast", self.autocast_code)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "half":
            if half_for_storage(node, self.parent_of, self.qualify) is not None:
                return  # rounding or a half checkpoint: no float16 training, nothing to scale
            chosen = explicit_choice(node, self.parent_of, self.qualify, self.code_of)
            self._add(node, ".half()" if chosen is None else f".half() chosen by {chosen}", None if chosen else self.fp16_code)
            return
        names = self.qualify(node.func)
        if names & GRAD_SCALER:
            test = float16_branch(node, self.parent_of, self.qualify)
            if test is not None:
                self._add(node, f"it is built only when float16 is chosen: if {self.code_of(test)}", None)
                return
            switch = self._fp16_switch(node)
            if switch is not None:
                self._add(node, f"it is enabled by the float16 option: enabled={self.code_of(switch)}", None)
            elif self.autocast_elsewhere:
                option = self._precision_option(node)
                if option is not None:
                    self._add(node, f"it is built for the precision option `{option}`, whose autocast is in another file", None)
            return
        if "builtins.getattr" in names or dotted(node.func) == "getattr":
            self._getattr(node)
            return
        if names & PARTIAL and node.args:
            target = self.qualify(node.args[0].value)
            if target & (AUTOCAST | CUDA_AUTOCAST):
                self._autocast(node, autocast_args(node.args[1:], bool(target & CUDA_AUTOCAST)))
            return
        if names & CUDA_AUTOCAST:
            self._autocast(node, autocast_args(node.args, True))
        elif names & AUTOCAST:
            self._autocast(node, autocast_args(node.args, False))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        """``cfg.torch_dtype == "float16"``: the user's option names float16 as a string (the dtype
        is made from it elsewhere, ``getattr(torch, name)`` in another module), so float16 stays
        selectable whatever this file's dtypes say."""
        if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)):
            return
        for one, other in ((node.left, node.comparisons[0].comparator), (node.comparisons[0].comparator, node.left)):
            # an attribute or a key (cfg.torch_dtype, args["dtype"]) is the user's; a bare name may be
            # one the module computes and the port sets (nanoGPT's dtype = "bfloat16" if ... else "float16")
            strings = [e.value for e in one.elements] if isinstance(one, (cst.Tuple, cst.List, cst.Set)) else [one]
            named = next((string for string in strings if string_value(string) in _FP16_OPTION_NAMES), None)
            if named is not None and isinstance(other, (cst.Attribute, cst.Subscript)):
                if _user_test(node, self.qualify):
                    # listed after the file's own float16 sources, which say more
                    self.option_sources.append(Fp16Source(self.line_of(node), f"the option {self.code_of(named)} selects it", (), node))
                return

    def _precision_option(self, call: cst.Call) -> str | None:
        """The user's precision test that builds or enables this scaler (open_clip's
        ``if args.precision == "amp":``), when its autocast is not in view: that option may
        select float16, so the scaler it builds is the float16 run's loss scaling."""
        enabled = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "enabled"), None)
        literal = isinstance(enabled, cst.Name) and enabled.value in {"True", "False"}
        if enabled is not None and not literal:
            text = self.code_of(enabled)
            if PRECISION_LABEL.search(text) and _user_test(enabled, self.qualify):
                return text
        child: cst.CSTNode = call
        parent = self.parent_of(child)
        while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if isinstance(parent, (cst.If, cst.IfExp)) and child is parent.body:
                text = self.code_of(parent.test)
                if PRECISION_LABEL.search(text) and _user_test(parent.test, self.qualify):
                    return text
            child, parent = parent, self.parent_of(parent)
        return None

    def _fp16_switch(self, call: cst.Call) -> cst.BaseExpression | None:
        """The scaler's ``enabled=`` when it names a float16 option (``precision == "fp16"``,
        ``args.fp16``), also through a local name (speechbrain's ``gradscaler_enabled = ...``):
        float16 stays selectable by the user, whatever this file's autocasts say."""
        enabled = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "enabled"), None)
        if enabled is None:
            return None
        values: list[cst.BaseExpression] = [enabled]
        if isinstance(enabled, (cst.Name, cst.Attribute)):
            values += [value for value in self.bound.get(dotted(enabled) or "", []) if value is not None]
        for value in values:
            if _names_fp16(value, self.qualify, self.bound):
                return enabled
        return None

    def _getattr(self, node: cst.Call) -> None:
        first, second = positional(node, 0), positional(node, 1)
        if first is None or second is None or "torch" not in self.qualify(first.value):
            return
        value = string_value(second.value)
        if value is None:
            self._add(node, "a dtype chosen at run time (getattr(torch, ...))", None)
        elif value in {"float16", "half"}:
            self._add(node, f'getattr(torch, "{value}")', self.fp16_code)

    def _autocast(self, node: cst.Call, args: AutocastArgs) -> None:
        if args.unsupported:
            self._add(node, "an autocast call with *args/**kwargs", None)
            return
        kind = device_kind(args.device) if not args.cuda_form else "cuda"
        if kind == "other" or (kind == "variable" and not self.accelerator_file):
            return
        dtype = dtype_kind(args.dtype, self.qualify, self.bound)
        if dtype == "unknown":
            self._add(node, "an autocast dtype set outside the file", None)
        elif dtype == "missing":
            self._add(node, "autocast without dtype (float16 by default)", self.autocast_code)


def half_tensor_call(node: cst.CSTNode, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None]) -> cst.Call | None:
    """The call NRN107 rewrites around a HalfTensor reference: ``HalfTensor(...)`` or ``x.type(HalfTensor)``."""
    parent = parent_of(node)
    if isinstance(parent, cst.Call) and parent.func is node:
        return parent
    if isinstance(parent, cst.Arg) and parent.keyword is None:
        call = parent_of(parent)
        if isinstance(call, cst.Call) and len(call.args) == 1 and isinstance(call.func, cst.Attribute) and call.func.attr.value == "type":
            return call
    return None


def _partial_of(arg: cst.Arg, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None], qualify: Qualify) -> bool:
    call = parent_of(arg)
    return isinstance(call, cst.Call) and bool(qualify(call.func) & PARTIAL) and bool(call.args) and call.args[0] is arg


def autocast_dtype_argument(
    node: cst.CSTNode, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None], qualify: Qualify
) -> bool:
    """Whether ``node`` is the dtype argument of an autocast call (the autocast rule rewrites it)."""
    arg = parent_of(node)
    call = parent_of(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(arg, cst.Arg) or not isinstance(call, cst.Call):
        return False
    args = list(call.args)
    names = qualify(call.func)
    if names & PARTIAL and args:
        names = qualify(args[0].value)
        args = args[1:]
    if not names & (AUTOCAST | CUDA_AUTOCAST):
        return False
    if arg.keyword is not None:
        return arg.keyword.value == "dtype"
    plain = [a for a in args if a.keyword is None and not a.star]
    return len(plain) > 1 and plain[1] is arg


def imported_as(module: cst.Module, source: str, obj: str | None) -> str | None:
    """The local name of ``import source`` (obj None) or ``from source import obj`` at top level."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if obj is None and isinstance(small, cst.Import):
                for alias in small.names:
                    if dotted(alias.name) == source:
                        return _local(alias) or source
            if obj is not None and isinstance(small, cst.ImportFrom) and small.module is not None:
                if dotted(small.module) != source or isinstance(small.names, cst.ImportStar):
                    continue
                for alias in small.names:
                    if dotted(alias.name) == obj:
                        return _local(alias) or obj
    return None


def _local(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None


def source_imports(func: cst.BaseExpression, qualified: set[str]) -> list[ImportSpec]:
    """The from-imports that brought ``func`` in (``from torch.cuda.amp import GradScaler as GS``,
    ``from torch.cuda import amp``); none when it is spelled through the torch module."""
    parts = (dotted(func) or "").split(".")
    if not parts[0] or len(parts) > 2:
        return []
    specs = []
    for name in qualified:
        module, _, obj = name.rpartition(".")
        if len(parts) == 2:  # from torch.cuda import amp; amp.X
            module, _, obj = module.rpartition(".")
        if parts[0] == "torch" or not module:
            continue
        specs.append(ImportSpec(module, obj, parts[0] if parts[0] != obj else None))
    return specs


# ----------------------------------------------------------------------------- layout-keeping argument edits
_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def separator(args: list[cst.Arg]) -> cst.Comma:
    """The comma between arguments as this call writes it (one per line in a multi-line call)."""
    for arg in args:
        if isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
            return arg.comma
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value, keyword=cst.Name(name), equal=_EQUAL)


def insert_args(args: list[cst.Arg], index: int, new: list[cst.Arg], comma: cst.Comma) -> list[cst.Arg]:
    """Insert ``new`` at ``index``; every argument but the last keeps/gets a comma, the original
    last comma (a trailing comma, or none) stays last."""
    if not new:
        return args
    if index < len(args):
        return [*args[:index], *(arg.with_changes(comma=comma) for arg in new), *args[index:]]
    last_comma = args[-1].comma if args else cst.MaybeSentinel.DEFAULT
    head = [*args[:-1], args[-1].with_changes(comma=comma)] if args else []
    added = [arg.with_changes(comma=comma) for arg in new[:-1]] + [new[-1].with_changes(comma=last_comma)]
    return [*head, *added]


def remove_arg(args: list[cst.Arg], index: int) -> list[cst.Arg]:
    """Drop one argument; when it was the last, the one before takes its comma."""
    if index == len(args) - 1 and index > 0:
        return [*args[: index - 1], args[index - 1].with_changes(comma=args[index].comma)]
    return [*args[:index], *args[index + 1 :]]


def as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    return _as_keyword(arg, name)


# ----------------------------------------------------------------------------- explicit choices
# Capability probes the port owns: on Neuron the answer is known (bfloat16 is always supported),
# so a choice made only by these may collapse to bfloat16. Any other test is the user's.
CAPABILITY_PROBES = frozenset(
    {
        "torch.cuda.is_available",
        "torch.cuda.is_bf16_supported",
        "torch.cuda.get_device_capability",
        "torch.cuda.amp.common.amp_definitely_not_available",
        # The same probes as NRN103 ports them (a port is a fixed point of this rule; rule by
        # rule, NRN203 sees these): torch.cuda.is_available() in a fallback, is_bf16_supported().
        "torch.accelerator.is_available",
        "torch.neuron.is_available",
        "torch.neuron.is_bf16_supported",
    }
)
# --style accelerator: torch.cuda.is_bf16_supported() -> torch.get_device_module().is_bf16_supported().
_DEVICE_MODULE_PROBES = frozenset({"is_available", "is_bf16_supported"})
# A test naming a precision (``args.fp16``, ``args.amp_dtype == "float16"``, ``mixed_precision == "fp16"``).
# Option values that name float16 (``--dtype float16``, ``precision: fp16``, Lightning's "16-mixed").
_FP16_OPTION_NAMES = frozenset({"float16", "fp16", "half", "16-mixed", "16-true"})
PRECISION_LABEL = re.compile(r"(?i)fp16|bf16|float16|half|precision|dtype")
EXPLICIT_CODE = "NRN208"  # rules/half_precision.py: the marker on a float16 choice kept as written


def owned_test(test: cst.BaseExpression, qualify: Qualify) -> bool:
    """Whether ``test`` is made only of CUDA capability probes (and literals, not/and/or, comparisons)."""
    if isinstance(test, cst.Call):
        func = test.func
        if isinstance(func, cst.Attribute) and func.attr.value in _DEVICE_MODULE_PROBES and isinstance(func.value, cst.Call):
            module = func.value  # torch.get_device_module(): the current accelerator's module
            return not module.args and "torch.get_device_module" in qualify(module.func)
        return bool(qualify(func) & CAPABILITY_PROBES)
    if isinstance(test, cst.BooleanOperation):
        return owned_test(test.left, qualify) and owned_test(test.right, qualify)
    if isinstance(test, cst.UnaryOperation):
        return owned_test(test.expression, qualify)
    if isinstance(test, cst.Subscript):  # torch.cuda.get_device_capability()[0]
        return owned_test(test.value, qualify)
    if isinstance(test, cst.Comparison):
        parts = [test.left, *(target.comparator for target in test.comparisons)]
        probes = [part for part in parts if not isinstance(part, (cst.Integer, cst.Float, cst.Tuple))]
        return bool(probes) and all(owned_test(part, qualify) for part in probes)
    return False


def explicit_choice(
    node: cst.CSTNode, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None], qualify: Qualify, code_of: Callable[[cst.CSTNode], str]
) -> str | None:
    """The source of the user's test that selects ``node`` (a float16 value), or None.

    ``torch.float16 if args.amp_dtype == "float16" else torch.bfloat16`` and an ``if``/``elif``
    branch whose test names a precision (``elif args.precision == "fp16":``) are the user's
    choice: an fp16 option must keep meaning float16. A choice made only by CUDA capability
    probes (nanoGPT's ``is_bf16_supported()``) is the port's to make.
    """
    child: cst.CSTNode = node
    parent = parent_of(child)
    while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(parent, cst.IfExp) and child is not parent.test:
            other = parent.orelse if child is parent.body else parent.body
            if _names_bf16(other, qualify) and not owned_test(parent.test, qualify):
                return code_of(parent.test)
        if isinstance(parent, (cst.If, cst.IfExp)) and child is not parent.test and _user_test(parent.test, qualify):
            text = code_of(parent.test)
            if PRECISION_LABEL.search(text) or _equals_sixteen(parent.test):
                return text
        if isinstance(parent, (cst.If, cst.IfExp, cst.Comparison, cst.ComparisonTarget)) and child is getattr(parent, "test", None):
            return None
        child, parent = parent, parent_of(parent)
    return None


def _equals_sixteen(test: cst.BaseExpression) -> bool:
    """``args.quantize == 16`` (ultralytics' export option): a 16-bit choice by number."""
    return any(
        isinstance(target.operator, cst.Equal)
        and any(isinstance(part, cst.Integer) and part.value == "16" for part in (comparison.left, target.comparator))
        for comparison in _comparisons(test)
        for target in comparison.comparisons
    )


def _user_test(test: cst.BaseExpression, qualify: Qualify) -> bool:
    """Not a capability probe, and not a check of a tensor's dtype (``x.dtype == torch.float16``:
    after the port that branch is simply not taken, so it needs no keeping)."""
    if owned_test(test, qualify):
        return False
    for node in _comparisons(test):
        if any(qualify(part) & (FP16_DTYPES | KEPT_DTYPES) for part in _compared(node)):
            return False
    return True


def _compared(comparison: cst.Comparison) -> list[cst.BaseExpression]:
    """The operands of a comparison, with the elements of a literal tuple/list/set
    (``x.dtype in (torch.float16, torch.bfloat16)``)."""
    parts: list[cst.BaseExpression] = []
    for part in [comparison.left, *(target.comparator for target in comparison.comparisons)]:
        if isinstance(part, (cst.Tuple, cst.List, cst.Set)):
            parts.extend(element.value for element in part.elements)
        else:
            parts.append(part)
    return parts


def _comparisons(test: cst.BaseExpression) -> list[cst.Comparison]:
    if isinstance(test, cst.Comparison):
        return [test]
    if isinstance(test, cst.BooleanOperation):
        return [*_comparisons(test.left), *_comparisons(test.right)]
    if isinstance(test, cst.UnaryOperation):
        return _comparisons(test.expression)
    return []


def _names_bf16(node: cst.BaseExpression, qualify: Qualify) -> bool:
    return "torch.bfloat16" in qualify(node) or string_value(node) == "bfloat16"


# Calls that consume a half tensor as storage, not as a training precision.
SAVE_CALLS = frozenset({"torch.save", "safetensors.torch.save_file", "safetensors.torch.save_model"})
_SAVE_METHODS = frozenset({"save_pretrained", "save_model", "save_checkpoint", "save_state_dict"})
_STORAGE_METHODS = frozenset({"float", "state_dict", "numpy", "tolist", "cpu"})


_COPY_CALLS = frozenset({"copy.deepcopy"})


def fp16_paired(node: cst.CSTNode, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None], qualify: Qualify) -> bool:
    """Whether ``node`` (a float16 cast) sits in the branch of a test that checks a value for
    float16 (``m.half() if x.dtype is torch.float16 else m``): the cast matches that value, which
    this rule leaves as it is (a comparison), so both stay float16 or the pair would disagree."""
    child: cst.CSTNode = node
    parent = parent_of(child)
    while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(parent, (cst.If, cst.IfExp)) and child is not parent.test:
            for comparison in _comparisons(parent.test):
                if any(qualify(part) & FP16_DTYPES for part in _compared(comparison)):
                    return True
        child, parent = parent, parent_of(parent)
    return False


_FP16_LABELS = frozenset({"float16", "fp16", "half", "16", "16-mixed", "16-true"})


def float16_branch(node: cst.CSTNode, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None], qualify: Qualify) -> cst.BaseExpression | None:
    """The test of the ``if`` whose body holds ``node`` and that selects float16
    (``if get_autocast_dtype() == torch.float16:``, ``if args.dtype == "fp16":``), or None: a
    GradScaler built there exists only for a float16 run, whatever the rest of the file does."""
    child: cst.CSTNode = node
    parent = parent_of(child)
    while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(parent, (cst.If, cst.IfExp)) and child is parent.body:
            for comparison in _comparisons(parent.test):
                if not all(isinstance(target.operator, (cst.Equal, cst.Is)) for target in comparison.comparisons):
                    continue
                parts = [comparison.left, *(target.comparator for target in comparison.comparisons)]
                if any(qualify(part) & FP16_DTYPES or string_value(part) in _FP16_LABELS for part in parts):
                    return parent.test
        child, parent = parent, parent_of(parent)
    return None


def half_for_storage(call: cst.Call, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None], qualify: Qualify) -> str | None:
    """Why ``x.half()`` is not mixed precision (rounding ``x.half().float()``, a half checkpoint
    ``torch.save(model.half().state_dict(), ...)``, or one built in place and saved later in the
    function), or None."""
    parent = parent_of(call)
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    if isinstance(receiver, cst.Call) and qualify(receiver.func) & _COPY_CALLS:
        return "a half-precision deep copy (a checkpoint or export file, not training compute)"
    if isinstance(parent, cst.Attribute) and parent.value is call and parent.attr.value in _STORAGE_METHODS:
        return "rounding" if parent.attr.value == "float" else "a half-precision copy for storage"
    node: cst.CSTNode | None = parent
    while node is not None and not isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        if isinstance(node, cst.Call):
            method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
            if qualify(node.func) & SAVE_CALLS or method in _SAVE_METHODS:
                return "a checkpoint saved in half precision"
        if isinstance(node, (cst.DictComp, cst.ListComp)) and _reads_state_dict(node.for_in.iter):
            return "a half-precision copy of a state_dict"
        node = parent_of(node)
    if _saved_in_function(call, parent_of, qualify):
        return "a checkpoint saved in half precision"
    function = _enclosing_function(call, parent_of)
    if function is not None and _CONVERTER_NAME.search(function.name.value):
        return f"the float16 conversion {function.name.value}() is named for (a storage format, not training compute)"
    return None


# ``optimizer_state_to_fp16``, ``weights_as_half``: a function whose name says it converts stored
# values (a state dict, weights, buffers, a checkpoint) to float16. A bare ``to_half(model)`` may
# be how a script trains in float16: not matched, ported as usual.
_CONVERTER_NAME = re.compile(
    r"(?i)(state|dict|ckpt|checkpoint|weights|buffers|export|save).*(^|_)(to|as)_(fp16|half|float16)(_|$)"
)


def _enclosing_function(node: cst.CSTNode, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None]) -> cst.FunctionDef | None:
    current = parent_of(node)
    while current is not None and not isinstance(current, cst.FunctionDef):
        current = parent_of(current)
    return current


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _saved_in_function(call: cst.Call, parent_of: Callable[[cst.CSTNode], cst.CSTNode | None], qualify: Qualify) -> bool:
    """``ckpt["model"].half()`` / ``state[k] = v.half()`` in a function that then saves ``ckpt`` /
    ``state`` (``torch.save(ckpt, path)``): a half checkpoint built in place, not training compute.
    The names: the root of the receiver and the roots of the assignment's targets."""
    names = {_root_name(call.func.value)} if isinstance(call.func, cst.Attribute) else set()
    node: cst.CSTNode | None = parent_of(call)
    while node is not None and not isinstance(node, cst.FunctionDef):
        if isinstance(node, cst.Assign):
            names |= {_root_name(target.target) for target in node.targets}
        node = parent_of(node)
    names.discard(None)
    if node is None or not names:
        return False
    names |= _copied_into(node, names)
    finder = _SavesOneOf(names, qualify)
    node.visit(finder)
    return finder.saved


def _copied_into(function: cst.FunctionDef, names: set[str | None]) -> set[str | None]:
    """Names the function assigns a dict display holding one of ``names`` (``combined =
    {"version": v, **ckpt}``, ``{"model": ckpt}``): saving that dict saves them."""
    found: set[str | None] = set()
    for statement in function.body.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Dict):
                continue
            if _dict_roots(small.value) & (names | found):
                found |= {_root_name(target.target) for target in small.targets}
    found.discard(None)
    return found


def _dict_roots(node: cst.Dict) -> set[str | None]:
    """The root names of a dict display's values and ``**`` unpackings."""
    return {_root_name(element.value) for element in node.elements if isinstance(element, (cst.DictElement, cst.StarredDictElement))}


class _SavesOneOf(cst.CSTVisitor):
    """Finds a save call (``torch.save(x, ...)``, ``x.save_pretrained``-style methods) whose first
    argument is rooted at one of ``names``."""

    def __init__(self, names: set[str | None], qualify: Qualify) -> None:
        super().__init__()
        self.names = names
        self.qualify = qualify
        self.saved = False

    def visit_Call(self, node: cst.Call) -> None:
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        if (self.qualify(node.func) & SAVE_CALLS or method in _SAVE_METHODS) and node.args:
            first = node.args[0].value
            roots = _dict_roots(first) if isinstance(first, cst.Dict) else {_root_name(first)}
            if roots & self.names:
                self.saved = True


@dataclass
class ScalerStays(FileAnalysis):
    """Whether a loss scaler stays active after the port: a GradScaler (or timm scaler wrapper)
    is built here and float16 remains reachable, or the scaler rule is not selected, or an
    ``Accelerator(mixed_precision=args.mixed_precision)`` may choose "fp16" (its own scaler). Neuron's
    fused AdamW ignores ``grad_scale``/``found_inf`` (neuron-torch-neuronx source, torch_neuronx/neuron.py), so the optimizer rules
    must not add ``fused=True`` to an optimizer such a scaler may step (``for_optimizer``)."""

    line: int | None = None  # the first kept scaler's line, None when no scaler stays
    anything: int | None = None  # the line of a kept scaler that may step any optimizer of the file
    stepped: dict[int, int] = field(default_factory=dict)  # id(optimizer construction) -> kept scaler's line

    def for_optimizer(self, call: cst.Call) -> int | None:
        """The line of a kept scaler that may step the optimizer ``call`` builds, else None."""
        return self.stepped.get(id(call), self.anything)

    @classmethod
    def compute(cls, rule: Rule) -> ScalerStays:
        finder = _ScalerCalls(rule.qualified)
        visit_original(child_index(rule), rule.context.module, finder)
        if finder.accelerate is not None:  # Accelerate builds its own GradScaler when that is "fp16"
            line = rule.position(finder.accelerate)[0]
            return cls(line, line)
        if finder.first is None:
            held = class_held(rule)
            if held is None:
                return cls()
            line = rule.position(held)[0]  # scaler_type = GradScaler: built later, stepping what the file does not show
            return cls(line, line)
        if not rule.options.selects("NRN204"):
            line = rule.position(finder.first)[0]
            return cls(line, line)
        blockers = rule.analysis(Inventory).blockers(rule.options.selects)
        if not blockers:
            return cls()
        from porter.rules.grad_scaler import kept_scalers  # the scaler rule's own decision (it imports this module)

        # each GradScaler decides on its own, and keeps fused off only the optimizers it may step
        kept = kept_scalers(rule, blockers)
        lines = [rule.position(call)[0] for call, _ in kept] + [rule.position(call)[0] for call in finder.wrappers]
        if not lines:
            return cls()
        unknown = [rule.position(call)[0] for call, steps in kept if steps is None] + [rule.position(c)[0] for c in finder.wrappers]
        held = class_held(rule)
        if held is not None:
            lines.append(rule.position(held)[0])
            unknown.append(rule.position(held)[0])
        stepped: dict[int, int] = {}
        for call, steps in kept:
            for optimizer in steps or ():
                stepped.setdefault(id(optimizer), rule.position(call)[0])
        return cls(min(lines), min(unknown) if unknown else None, stepped)


def class_held(rule: Rule) -> cst.CSTNode | None:
    """The first GradScaler class handed to a name as a value (``scaler_type = GradScaler``, or
    the ``functools.partial(torch.amp.GradScaler, "neuron")`` the scaler rule makes of it)."""
    for node in child_index(rule).walk(rule.context.module):
        if not isinstance(node, (cst.Name, cst.Attribute)):
            continue
        holder = rule.parent(node)
        if isinstance(holder, cst.Arg):  # partial(GradScaler, ...): the partial is what is held
            call = rule.parent(holder)
            if not (isinstance(call, cst.Call) and call.args and call.args[0] is holder and rule.qualified(call.func) & PARTIAL):
                continue
            holder = rule.parent(call)
        if isinstance(holder, (cst.Assign, cst.IfExp)) and rule.qualified(node) & GRAD_SCALER:
            return node
    return None


ACCELERATORS = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})


class _ScalerCalls(cst.CSTVisitor):
    def __init__(self, qualify: Qualify) -> None:
        super().__init__()
        self.qualify = qualify
        self.first: cst.Call | None = None
        self.wrappers: list[cst.Call] = []  # timm loss-scaler wrappers (their scaler stays with float16)
        self.accelerate: cst.Call | None = None  # Accelerator(mixed_precision=<not a literal>)

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualify(node.func)
        if self.first is None and names & (GRAD_SCALER | SCALER_WRAPPERS):
            self.first = node
        if names & SCALER_WRAPPERS:
            self.wrappers.append(node)
        if self.accelerate is None and names & ACCELERATORS:
            precision = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "mixed_precision"), None)
            if precision is not None and string_value(precision) is None:
                self.accelerate = node


def _reads_state_dict(node: cst.BaseExpression) -> bool:
    """``model.state_dict().items()`` / ``sd.items()`` with ``sd`` named like a state dict."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value == "state_dict":
            return True
        node = node.func.value
    text = dotted(node) or ""
    return bool(re.search(r"(?i)state_dict|checkpoint|ckpt", text))
