"""NRN203: float16 choices (``torch.float16``, ``.half()``, ``"float16"`` dtype names) become bfloat16."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

import libcst as cst

from porter.engine.astcheck import SourceFacts
from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import positional
from porter.rules._lib.imports import torch_alias
from porter.rules._lib.nodes import dotted, method_name, string_value, with_string_value
from porter.rules._lib.precision import (
    DTYPE_NAME,
    EXPLICIT_CODE,
    FP16_DTYPES,
    autocast_dtype_argument,
    explicit_choice,
    fp16_paired,
    half_for_storage,
    half_tensor_call,
    in_comparison,
    in_dtype_list,
    owned_test,
)
from porter.rules._lib.tree import holder_through_choices

_BF16_DTYPES = frozenset({"torch.bfloat16"})
# Calls that read a dtype's properties, and numpy's float16 (a pair with it binds a format's dtype).
_DTYPE_FACTS = frozenset({"torch.finfo", "torch.iinfo"})
_NUMPY_FP16 = frozenset({"numpy.float16", "numpy.half"})
_FP16_NAMES = frozenset({name.rsplit(".", 1)[-1] for name in FP16_DTYPES} | {"half", "HalfTensor"})
_FP16_STRINGS = frozenset({"float16", "half"})


class HalfToBf16(Rule):
    """Make every float16 choice of a training script bfloat16.

    What it does:
        ``torch.float16``/``torch.half`` (any alias: ``th.half``, ``from torch import float16``)
        become ``torch.bfloat16`` where they produce values (``.to(torch.float16)``,
        ``dtype=torch.half``, ``{"float16": torch.float16}[name]`` lookups as in nanoGPT,
        ``torch.set_default_dtype``); ``x.half()`` becomes ``x.bfloat16()``; the string
        ``"float16"`` becomes ``"bfloat16"`` where it names a dtype (assigned to or defaulting a
        ``dtype``-named variable or keyword, an argparse ``--dtype`` default,
        ``getattr(torch, "float16")``); ``torch.cuda.HalfTensor(...)`` and
        ``x.type(torch.cuda.HalfTensor)``, which NRN107 turns into calls with
        ``dtype=torch.float16``, get ``dtype=torch.bfloat16``. A choice between the two made only by
        CUDA capability probes collapses to bfloat16 (on Neuron bfloat16 is always supported):
        nanoGPT's ``'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        else 'float16'`` becomes ``'bfloat16'``, and so does the same choice in the form NRN103
        ports the probes to (``torch.accelerator.is_available() and
        torch.neuron.is_bf16_supported()``, or ``torch.get_device_module().is_bf16_supported()``
        with ``--style accelerator``), so one pass and the rules one by one agree. A choice the user makes is kept as written with an
        NRN208 marker, every call and branch included: ``torch.float16 if args.amp_dtype ==
        "float16" else torch.bfloat16``, ``torch.float16 if infer_device() == "mps" else ...``, and
        float16 in an ``if``/``elif`` branch whose test names a precision (``elif
        args.prior_generation_precision == "fp16":``, ``if args.fp16:``, ``if args.quantize == 16:``); an argparse default
        ``"float16"`` is a default and becomes ``"bfloat16"``, so ``--amp-dtype float16`` still
        means float16 (the GradScaler rule then keeps the scaler). ``x.half()`` that rounds
        (``x.half().float()``) or makes a half checkpoint (``torch.save(model.half().state_dict())``,
        a ``{k: v.half() for k, v in sd.items()}`` copy, ``deepcopy(ema).half()`` for an export
        file, ``ckpt["model"].half()`` in a function that saves ``ckpt`` or a dict holding it,
        ``{"version": v, **ckpt}``; any ``.half()`` in a function named for the conversion,
        ``optimizer_state_to_fp16``) is not mixed precision and is left alone; so is a cast in the branch of a float16
        dtype test (``m.half() if x.dtype is torch.float16 else m``: it matches a value this rule
        does not change). float16 in a kept table of named options (``DTYPES = {"16-true":
        torch.float16, "bf16-true": torch.bfloat16}``) is the user's choice: kept, NRN208 marker. So is
        float16 in a list/tuple/set of dtypes (``valid = (torch.float16, torch.bfloat16)``: a table of
        supported dtypes, where bfloat16 would appear twice), left as written. So is float16 stated as
        a fact rather than chosen: ``torch.finfo(torch.float16)`` (its range), a pair with numpy's
        float16 (``{"tensor(float16)": (torch.float16, np.float16)}``: one format's dtype in both
        libraries), and a cast to a host copy (``t.to(torch.float16).cpu().numpy()``, as ``.half()``
        above: numpy has no bfloat16). Comparisons (``x.dtype == torch.float16``) are left alone:
        they select, they do not produce float16, and after the port their fp16 branch is simply
        not taken; so are dict keys (``{torch.float16: 312.5}`` lookups). So is the float16 default
        of a parameter named for a communication / reduction / accumulation dtype
        (``communication_data_type=torch.float16`` in DeepSpeed's ZeRO optimizers, ``reduce_dtype``,
        ``grad_accum_dtype``): it follows the gradients it reduces, whose dtype the caller chose
        (DeepSpeed's engine always passes the one its fp16/bf16 config selects, and the config port,
        NRN291/NRN292, changes that config); bfloat16 there would reduce float16 gradients in
        bfloat16. With ``--style accelerator`` nothing is rewritten: that style keeps the CUDA program,
        where float16 is what the user chose (a capability probe already picks bfloat16 on
        Neuron), and the GradScaler stays for it; an explicit float16 choice (an option, a
        table of named precisions) still gets the NRN208 marker that bfloat16 is the Trainium choice. Only files being
        ported change (a CUDA-ism elsewhere in the file, code already on ``neuron``, a batch
        run over a repository with CUDA-isms, or ``--all``): float16 in CPU-only or library
        code is left alone.

    Why:
        Trainium's recommended reduced precision is bfloat16 (every TorchNeuron device supports
        it: ``torch.neuron.is_bf16_supported()`` is True). float16 needs loss scaling, and the
        GradScaler kernels are not implemented by TorchNeuron (CPU fallback, torch-neuronx source, csrc/amp/autocast_mode.cpp; PyTorch AMP docs); the
        GradScaler rule (NRN204) can only drop the scaler when no float16 is left.

    Before:
        dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'
        ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
        model = model.half()
        amp_dtype = torch.float16 if args.amp_dtype == "float16" else torch.bfloat16

    After:
        dtype = 'bfloat16'
        ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.bfloat16}[dtype]
        model = model.bfloat16()
        # porter: NRN208 float16 kept: `args.amp_dtype == "float16"` decides the dtype (a user choice); ...
        amp_dtype = torch.float16 if args.amp_dtype == "float16" else torch.bfloat16

    Safety:
        Review: bfloat16 keeps float32's range but has 8 mantissa bits against float16's 11, so
        pure half-precision training (``model.half()`` with no fp32 master weights) may converge
        differently; under autocast the difference is absorbed by AMP's fp32 op lists. Receiver
        heuristic: every ``.half()`` method call is taken to be ``Tensor.half``/``Module.half``
        (a user class with its own ``half()`` would be renamed too). Known misses: dtypes chosen
        at run time (``getattr(torch, args.dtype)``, ``--dtype float16`` on the command line)
        are not changed — the GradScaler rule keeps the scaler and says why (NRN206); float16
        saved through a helper of another module (``export(model.half())``) becomes bfloat16;
        ``torch`` bound only by a star import (DeepSpeed's stage3.py gets it from ``from
        deepspeed.runtime.zero.partition_parameters import *``) is not resolved, so no rule sees
        that file's torch APIs.
        Choice heuristic: a test is the port's only when it is made of CUDA capability probes
        (``is_available``, ``is_bf16_supported``, ``get_device_capability``, and their
        ``torch.neuron``/``torch.accelerator``/``torch.get_device_module()`` ports); a tensor dtype check
        (``x.dtype == torch.float16``) selects, so its branch is ported; any other test naming a
        precision (``fp16``/``bf16``/``half``/``precision``/``dtype`` in its text) is the user's.
    """

    code: ClassVar[str] = "NRN203"
    name: ClassVar[str] = "fp16-to-bf16"
    summary: ClassVar[str] = "float16 choices (torch.float16/half, .half(), 'float16' dtype names) -> bfloat16"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("float16", "half", "HalfTensor")
    # float16 is a deliberate choice in CPU-only and library code; only a file being ported (one
    # with a CUDA-ism, or already on neuron, or --all) has it made bfloat16.
    requires_port_context: ClassVar[bool] = True
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN208": "float16 chosen by an explicit option or another device's branch: kept as written (review marker)",
    }
    order: ClassVar[int] = 30

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """With ``--style accelerator`` only NRN208 markers, made from the same nodes. Every edit
        starts from a node whose qualified name is in FP16_DTYPES (its last part ``float16``/``half`` an identifier),
        a ``.half()`` call (attribute ``half``), ``torch.cuda.HalfTensor`` (``HalfTensor``), or a
        ``"float16"``/``"half"`` string: a lone literal (``visit_SimpleString`` edits none inside
        a concatenation: ``_dtype_string_position`` needs an assignment, parameter, dict value or
        argument as its holder) or a conditional's branch (``string_value``: a concatenation's
        joined value), so one ``str`` constant of exactly that value."""
        return bool(facts.identifiers & _FP16_NAMES or facts.strings & _FP16_STRINGS)

    def visit_Module(self, node: cst.Module) -> None:
        self._torch = torch_alias(node)
        self._collapsed: set[int] = set()
        # --style accelerator keeps the CUDA program: float16 there is the user's (the GradScaler
        # stays for it, see keeps_fp16 in rules/_lib/precision.py); a capability probe already
        # picks bfloat16 on Neuron. Only the NRN208 advice on an explicit float16 choice is given
        # (accelerator round 3: without it nothing told that user bfloat16 is the Trainium choice).
        self._off = self.options.style == "accelerator"

    # ------------------------------------------------------------------ a choice between the two
    def visit_IfExp(self, node: cst.IfExp) -> None:
        if self._off:
            return
        body, orelse = self._precision_of(node.body), self._precision_of(node.orelse)
        if "fp16" not in {body, orelse} or not {body, orelse} <= {"bf16", "fp16"}:
            return
        if not owned_test(node.test, self.qualified):
            return  # the user's choice (an option, another device): kept, see _explicit
        self._collapsed.update({id(node.body), id(node.orelse)})
        kept = "body" if body == "bf16" else "orelse" if orelse == "bf16" else None

        def collapse(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.IfExp)
            branch = updated.orelse if kept == "orelse" else updated.body
            if kept is None:  # both float16: the body, made bfloat16
                branch = _as_bf16(branch)
            return branch.with_changes(lpar=updated.lpar, rpar=updated.rpar)

        # The test is only CUDA capability probes (queries, no effects): dropping it is this rule's own edit.
        self.replace(node, collapse, "float16 choice -> bfloat16 (every Neuron device supports bfloat16)", drops_calls=True)

    def _precision_of(self, node: cst.BaseExpression) -> str | None:
        names = self.qualified(node)
        if names & FP16_DTYPES:
            return "fp16"
        if names & _BF16_DTYPES:
            return "bf16"
        if self._dtype_string_position(node):
            return self._string_precision(node)
        return None

    @staticmethod
    def _string_precision(node: cst.BaseExpression) -> str | None:
        value = string_value(node)
        return {"float16": "fp16", "bfloat16": "bf16"}.get(value or "")

    # ------------------------------------------------------------------ torch.float16 / torch.half
    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._dtype_ref(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._dtype_ref(node)

    def _dtype_ref(self, node: cst.Attribute | cst.Name) -> None:
        parent = self.parent(node)
        if type(parent) is cst.Attribute and (parent.value is node or parent.attr is node):  # type: ignore[union-attr]  # exact type: every name
            return
        if id(node) in self._collapsed or not self.qualified(node) & FP16_DTYPES:
            return
        if in_comparison(node, self.parent) or autocast_dtype_argument(node, self.parent, self.qualified):
            return
        if in_dtype_list(node, self.parent, self.qualified):
            return  # a table of supported dtypes: bfloat16 is in it already, or would be twice
        if _dict_key(node, self.parent(node)):
            return  # {torch.float16: ...} looks values up: a selector, like a comparison
        if fp16_paired(node, self.parent, self.qualified) or self._explicit(node) or self._option_table(node):
            return
        if self._describes_float16(node):
            return
        if self._off:
            return  # --style accelerator: only the user's explicit float16 choices get the advice
        if _reduction_default(node, self.parent(node)):
            return  # follows the dtype of the tensors it reduces (the caller's fp16/bf16 choice)
        text = dotted(node) or ""
        if isinstance(node, cst.Attribute):
            new = cst.parse_expression(text.rsplit(".", 1)[0] + ".bfloat16")
            self.replace(node, new, f"{text} -> bfloat16")
            return
        alias = self._torch or "torch"
        imports = () if self._torch else (ImportSpec("torch"),)
        self.replace(node, cst.parse_expression(f"{alias}.bfloat16"), f"{text} -> torch.bfloat16", imports=imports)
        for name in self.qualified(node):
            module, _, obj = name.rpartition(".")
            self.drop_import_if_unused(ImportSpec(module, obj, text if text != obj else None))

    def _describes_float16(self, node: cst.Attribute | cst.Name) -> bool:
        """float16 as a fact, not a training precision: ``torch.finfo(torch.float16)`` (its range),
        a pair with numpy's float16 (``(torch.float16, np.float16)``: a format's dtype in both
        libraries, bound together), or the dtype of a cast ``half_for_storage`` names
        (``t.to(torch.float16).cpu().numpy()``: a host copy; numpy has no bfloat16)."""
        parent = self.parent(node)
        holder = self.parent(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(holder, cst.Call) and holder.args[0] is parent:
            if self.qualified(holder.func) & _DTYPE_FACTS:
                return True
            if method_name(holder) == "to" and half_for_storage(holder, self.parent, self.qualified) is not None:
                return True
        if isinstance(parent, cst.Element) and isinstance(pair := self.parent(parent), (cst.Tuple, cst.List)):
            return any(isinstance(e, cst.Element) and self.qualified(e.value) & _NUMPY_FP16 for e in pair.elements)
        return False

    # ------------------------------------------------------------------ .half()
    def visit_Call(self, node: cst.Call) -> None:
        if self._off:
            return
        if self._cuda_half_tensor_call(node):
            # NRN107 (order 20) rewrites this call to one with dtype=torch.float16; this edit of
            # the same node runs after it and makes that dtype bfloat16.
            self.replace(node, _bf16_dtype_keyword, "torch.cuda.HalfTensor -> bfloat16 tensors")
            return
        if method_name(node) == "half" and isinstance(node.func, cst.Attribute):
            if half_for_storage(node, self.parent, self.qualified) is not None or fp16_paired(node, self.parent, self.qualified):
                return  # a checkpoint/export copy, or a cast that matches a float16 value left as it is
            if self._explicit(node):
                return  # rounding / a half checkpoint is not mixed precision; an option is the user's
            self.replace(
                node,
                lambda n: n.with_changes(func=n.func.with_changes(attr=cst.Name("bfloat16"))),  # type: ignore[attr-defined]
                ".half() -> .bfloat16()",
            )

    def _explicit(self, node: cst.CSTNode) -> bool:
        """Keep (and mark) a float16 value an option or another device chooses: an fp16 option
        must still mean float16 (never bfloat16 under an fp16 label), and the branch stays."""
        test = explicit_choice(node, self.parent, self.qualified, self.context.module.code_for_node)
        if test is None:
            return False
        self.mark(
            node,
            f"float16 kept: `{_short(test)}` decides the dtype (a user choice); on Trainium choose bfloat16 there (float16 needs its GradScaler)",
            code=EXPLICIT_CODE,
        )
        return True

    def _option_table(self, node: cst.CSTNode) -> bool:
        """Keep (and mark) float16 in a table of named precisions that is kept for later lookups
        (``DTYPES = {"16-true": torch.float16, "bf16-true": torch.bfloat16}``): its keys are the
        user's options, and an fp16 key must still mean float16. A table subscripted where it is
        written (nanoGPT's ``{...}[dtype]``) only translates a name the port chose, and is ported,
        unless its key is a parameter or an attribute (``{...}[precision]``): the caller's option."""
        element = self.parent(node)
        table = self.parent(element) if isinstance(element, cst.DictElement) and element.value is node else None
        if not isinstance(table, cst.Dict) or string_value(element.key) is None:  # type: ignore[union-attr]
            return False
        outer = self.parent(table)
        if isinstance(outer, cst.Subscript) and outer.value is table and not self._user_key(outer):
            return False
        if not any(_names_bf16_value(e.value, self.qualified) for e in table.elements if isinstance(e, cst.DictElement)):
            return False
        self.mark(
            node,
            f"float16 kept: the option {string_value(element.key)!r} names it (a user choice); on Trainium prefer bfloat16 (float16 needs its GradScaler)",  # type: ignore[union-attr]
            code=EXPLICIT_CODE,
        )
        return True

    def _user_key(self, subscript: cst.Subscript) -> bool:
        """The key of ``{...}[key]`` comes from the caller or the command line: a parameter of the
        enclosing function (litgpt's ``precision``) or an attribute (``args.precision``), not a
        name the module computes for itself (nanoGPT's ``dtype``, which the port sets)."""
        if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
            return False
        key = subscript.slice[0].slice.value
        if isinstance(key, cst.Attribute):
            return True
        if not isinstance(key, cst.Name):
            return False
        current = self.parent(subscript)
        while current is not None and not isinstance(current, cst.FunctionDef):
            current = self.parent(current)
        if current is None:
            return False
        params = current.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        return any(param.name.value == key.value for param in every)

    def _cuda_half_tensor_call(self, node: cst.Call) -> bool:
        for candidate in (node.func, *(arg.value for arg in node.args[:1])):
            if "torch.cuda.HalfTensor" in self.qualified(candidate):
                return half_tensor_call(candidate, self.parent) is node
        return False

    # ------------------------------------------------------------------ "float16" dtype names
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if id(node) in self._collapsed or value not in {"float16", "half"}:
            return
        if not self._dtype_string_position(node) or (value == "half" and not self._getattr_torch(node)):
            return
        if self._explicit(node) or self._off:
            return
        self.replace(node, lambda n: with_string_value(n, "bfloat16"), f'"{value}" -> "bfloat16"')  # type: ignore[arg-type]

    def _dtype_string_position(self, node: cst.CSTNode) -> bool:
        """Whether a string here names a torch dtype (so "float16" -> "bfloat16" keeps it valid)."""
        held = holder_through_choices(self, node)
        if held is None:
            return False
        child, parent = held
        if isinstance(parent, cst.Assign):
            return any(_dtype_named(target.target) for target in parent.targets)
        if isinstance(parent, cst.AnnAssign):
            return _dtype_named(parent.target)
        if isinstance(parent, cst.Param):
            return bool(DTYPE_NAME.search(parent.name.value))
        if isinstance(parent, cst.DictElement) and parent.value is child:
            key = string_value(parent.key)
            return key is not None and bool(DTYPE_NAME.search(key))
        if isinstance(parent, cst.Arg):
            return self._dtype_argument(parent)
        return False

    def _dtype_argument(self, arg: cst.Arg) -> bool:
        call = self.parent(arg)
        if not isinstance(call, cst.Call):
            return False
        if arg.keyword is not None:
            if DTYPE_NAME.search(arg.keyword.value):
                return True
            if arg.keyword.value == "default" and method_name(call) == "add_argument":
                return any(
                    DTYPE_NAME.search((string_value(a.value) or "").lstrip("-").replace("-", "_"))
                    for a in call.args
                    if a.keyword is None
                )
            return False
        return self._getattr_torch(arg.value)

    def _getattr_torch(self, node: cst.CSTNode) -> bool:
        """``node`` is the name in ``getattr(torch, name)``."""
        arg = self.parent(node)
        call = self.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or not isinstance(arg, cst.Arg):
            return False
        first = positional(call, 0)
        return (
            dotted(call.func) == "getattr"
            and positional(call, 1) is arg
            and first is not None
            and "torch" in self.qualified(first.value)
        )


_REDUCTION_DTYPE = re.compile(r"(?i)(comm|reduc|allreduce|accum)\w*(dtype|data_type)$")


def _reduction_default(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
    """``def __init__(..., communication_data_type=torch.float16)``: the default of a parameter
    that names a communication / reduction / accumulation dtype (DeepSpeed's ZeRO optimizers;
    their engine always passes the value its fp16/bf16 config chose)."""
    return isinstance(parent, cst.Param) and parent.default is node and bool(_REDUCTION_DTYPE.search(parent.name.value))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _as_bf16(node: cst.BaseExpression) -> cst.BaseExpression:
    """``"float16"`` -> ``"bfloat16"``; ``torch.float16``/``th.half`` -> ``torch.bfloat16``/``th.bfloat16``."""
    if isinstance(node, cst.SimpleString):
        return with_string_value(node, "bfloat16")
    if isinstance(node, cst.Attribute):
        return node.with_changes(attr=cst.Name("bfloat16"))
    return node


def _bf16_dtype_keyword(updated: cst.CSTNode) -> cst.CSTNode:
    """``f(..., dtype=torch.float16)`` -> ``f(..., dtype=torch.bfloat16)``; anything else unchanged."""
    if not isinstance(updated, cst.Call):
        return updated
    args = [
        arg.with_changes(value=_as_bf16(arg.value))
        if arg.keyword is not None and arg.keyword.value == "dtype" and (dotted(arg.value) or "").rsplit(".", 1)[-1] in {"float16", "half"}
        else arg
        for arg in updated.args
    ]
    return updated.with_changes(args=args)


def _names_bf16_value(node: cst.BaseExpression, qualify: Callable[[cst.CSTNode], set[str]]) -> bool:
    return bool(qualify(node) & _BF16_DTYPES)


def _dict_key(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
    return isinstance(parent, cst.DictElement) and parent.key is node


def _dtype_named(target: cst.CSTNode) -> bool:
    text = dotted(target)
    return text is not None and bool(DTYPE_NAME.search(text.split(".")[-1]))
