"""NRN201/NRN202: CUDA autocast becomes ``torch.autocast(device_type="neuron", dtype=torch.bfloat16)``."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.device import ACCELERATOR_TYPE_OR_CUDA
from porter.rules._lib.imports import torch_alias
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.precision import (
    _CUDA_ORDER,
    _GENERIC_ORDER,
    ACCELERATOR_DEVICE_TYPE,
    AUTOCAST,
    CUDA_AUTOCAST,
    PARTIAL,
    Bindings,
    as_keyword,
    autocast_args,
    bound_names,
    built_at_import,
    device_kind,
    dtype_kind,
    file_mentions_accelerator,
    imported_as,
    insert_args,
    keyword_arg,
    remove_arg,
    separator,
    source_imports,
)
from porter.rules._lib.tree import child_index


class AutocastBf16(Rule):
    """Port CUDA autocast to Neuron autocast with an explicit bfloat16 dtype.

    What it does:
        ``torch.cuda.amp.autocast(...)`` (whose first positional parameter is ``enabled``, not a
        device), ``torch.autocast("cuda", ...)`` and ``torch.amp.autocast(device_type="cuda")``
        become ``torch.autocast(device_type="neuron", dtype=torch.bfloat16, ...)``, keeping
        ``enabled=`` and ``cache_enabled=``. A float16 ``dtype`` becomes ``torch.bfloat16``; a
        missing one is added. ``autocast(device_type=<variable>)`` keeps the variable (its value is
        ported where it is computed, so a CPU branch stays a CPU branch) and gets the dtype. The
        same holds for ``with autocast():`` after ``from torch.cuda.amp import autocast``,
        ``@torch.cuda.amp.autocast()`` decorators, ``functools.partial(torch.autocast, ...)``
        factories (timm) and a bare ``torch.cuda.amp.autocast`` reference (``amp_autocast =
        torch.cuda.amp.autocast`` becomes a ``functools.partial`` of ``torch.autocast``); a bare
        ``torch.cuda.amp`` module reference (timm's ``getattr(torch.cuda.amp, 'autocast')``
        feature test) becomes ``torch.amp``. With
        ``--style accelerator`` the device type is
        ``torch.accelerator.current_accelerator().type`` (the spelling the NRN1xx rules use).
        An autocast built at import time (a decorator, a module-level ``with`` or object) gets
        ``"neuron" if torch.accelerator.is_available() else "cpu"``: ``torch.autocast("neuron")``
        raises on a torch without torch-neuronx, where ``"cuda"`` only warned. A ``"cuda"``
        parameter default that is the autocast's device (``def autocast(enabled, device="cuda")``)
        gets the same fallback. Those two device strings are this rule's alone (NRN101 leaves them:
        ``autocast_ports_device`` in ``rules/_lib/precision.py``), so the fallback is the same in one
        pass and with the rules applied one by one. ``torch.autocast("xla", dtype=torch.float16)`` gets bfloat16 in the
        pass where the XLA rule (NRN314) makes its device ``"neuron"``.
        NRN202 marks an autocast whose dtype comes from outside the file (``dtype=args.amp_dtype``)
        or whose arguments cannot be mapped (``**kwargs``). A dtype variable this file assigns
        from the user's option (``None`` / ``torch.bfloat16`` / ``torch.float16`` by branch) is
        resolved there, not marked: the float16 choice carries its own NRN208 marker.

    Why:
        TorchNeuron implements autocast for ``device_type="neuron"`` with the CUDA cast lists.
        Without an explicit dtype the PrivateUse1 autocast dtype is float16 (PyTorch's default
        table; TorchNeuron never sets another — an inference from both sources, torch-neuronx source, csrc/amp/autocast_mode.cpp; PyTorch AMP docs), and
        float16 needs a GradScaler whose kernels TorchNeuron does not implement (CPU fallback).
        bfloat16 needs no loss scaling. ``torch.cuda.amp.autocast`` is deprecated and targets CUDA
        only: on Trainium it silently does nothing useful.

    Before:
        with torch.cuda.amp.autocast(enabled=use_amp):
            loss = model(x)
        ctx = torch.amp.autocast(device_type=device_type, dtype=torch.float16)

    After:
        with torch.autocast(device_type="neuron", dtype=torch.bfloat16, enabled=use_amp):
            loss = model(x)
        ctx = torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16)

    Safety:
        Safe: bfloat16 has float32's range, so it never overflows where float16 did; precision
        differs (fewer mantissa bits), which AMP's fp32 cast lists absorb. Messages and markers
        name the device as written: under ``--style accelerator`` the device-generic expression
        (``torch.accelerator.current_accelerator().type``), never "neuron". A variable device type
        is taken to be the accelerator only in files that mention ``cuda``, ``neuron`` or
        ``current_accelerator`` (CPU-only files are left alone); on an ``mps`` device the added bfloat16 needs macOS 14+. A
        ``dtype=`` name is kept when every value the file assigns it is a dtype written in the
        file (a literal, a choice between literals, a ``{...}[name]`` lookup, ``getattr(torch,
        "...")``): the fp16 rule NRN203 ports those values, or keeps a user's fp16 choice. A name
        that may hold a value from outside (``amp_dtype = cfg.amp_dtype``, a parameter) gets an
        NRN202 marker and keeps a GradScaler (NRN206), so no pass leaves float16 unscaled. A bare reference
        rewritten to ``partial(torch.autocast, device_type=..., dtype=...)`` breaks callers that
        pass ``enabled`` positionally (rare). ``--style accelerator`` writes
        ``getattr(torch.accelerator.current_accelerator(), "type", "cuda")``: on a CPU-only host
        ``current_accelerator()`` is None and the autocast stays CUDA's, which disables itself
        there as the original did (an import-time autocast's guarded form gives "cpu").
    """

    code: ClassVar[str] = "NRN201"
    name: ClassVar[str] = "autocast-bf16"
    summary: ClassVar[str] = 'CUDA autocast -> torch.autocast(device_type="neuron", dtype=torch.bfloat16)'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("autocast", "cuda")  # torch.cuda.amp used as a module has "cuda"

    @classmethod
    def triggered_by(cls, text: str) -> bool:
        # Every form the rule ports names CUDA (or a device type ported elsewhere in a file that
        # already mentions neuron); a device-generic autocast in library code is left alone.
        # torch-xla's autocast("xla") too: the XLA rule makes it "neuron" in the same pass, and its
        # float16 must become bfloat16 in that pass (one pass is a fixed point).
        # current_accelerator: a file NRN101 already ported in --style accelerator.
        return "cuda" in text or ("autocast" in text and ("neuron" in text or "xla" in text or "current_accelerator" in text))
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN202": "autocast whose dtype or arguments cannot be ported safely: review marker",
    }
    order: ClassVar[int] = 30

    def visit_Module(self, node: cst.Module) -> None:
        self._torch = torch_alias(node)
        self._bound: Bindings | None = None  # bound_names(), computed when an autocast call needs it
        self._accelerator_file = file_mentions_accelerator(self.context.text)

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified(node.func)
        if names & PARTIAL and node.args and not node.args[0].star and node.args[0].keyword is None:
            target = self.qualified(node.args[0].value)
            if target & (AUTOCAST | CUDA_AUTOCAST):
                self._port(node, skip=1, cuda_form=bool(target & CUDA_AUTOCAST))
        elif names & CUDA_AUTOCAST:
            self._port(node, skip=0, cuda_form=True)
        elif names & AUTOCAST:
            self._port(node, skip=0, cuda_form=False)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._bare_reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._bare_reference(node)

    # ------------------------------------------------------------------ calls and partials
    def _port(self, call: cst.Call, skip: int, cuda_form: bool) -> None:
        args = autocast_args(call.args[skip:], cuda_form)
        if args.unsupported:
            self.mark(call, f"autocast with unmappable arguments: port to torch.autocast(device_type={self._device_words()}, dtype=torch.bfloat16)", code="NRN202")
            if skip == 0 and device_kind(args.device) == "variable":
                self._default_fallback(call, args.device)  # the device is still the first argument: its default keeps a fallback
            return
        kind = "cuda" if cuda_form else device_kind(args.device)
        if kind in {"other", "missing"} or (kind == "variable" and not self._accelerator_file):
            return
        if self._bound is None:
            self._bound = bound_names(self.context.module, child_index(self))
        dtype = dtype_kind(args.dtype, self.qualified, self._bound)
        if dtype == "unknown":
            text = self.context.module.code_for_node(args.dtype) if args.dtype is not None else ""
            self.mark(call, f"autocast dtype {text} is set outside this file: use torch.bfloat16 on Neuron", code="NRN202")
        new_device = kind == "cuda"
        new_dtype = dtype in {"missing", "fp16"}
        if new_dtype and self.options.style == "accelerator":
            # The accelerator style keeps CUDA's program: float16 (written, or autocast's CUDA
            # default) is the user's there; the GradScaler stays for it (Inventory: no rule owns it).
            new_dtype = False
            self.mark(call, _KEPT_FP16, code="NRN202")
        if kind == "variable" and skip == 0:
            self._default_fallback(call, args.device)
        if not new_device and not new_dtype:
            return
        # Built at import time (a decorator, a module-level object or with): "neuron" would raise
        # there on a torch without torch-neuronx, so the device keeps a CPU fallback.
        import_time = new_device and skip == 0 and built_at_import(self, call)
        alias = self._torch or "torch"
        imports = () if self._torch else (ImportSpec("torch"),)
        func = call.args[0].value if skip else call.func
        new_func = self._generic_func(func) if cuda_form else None
        quote = _quote_of(args.device)

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            device = self._device_expr(alias, quote, import_time) if new_device else None
            bf16 = cst.parse_expression(f"{alias}.bfloat16") if new_dtype else None
            args = _edited_args(list(updated.args), skip, cuda_form, device, bf16)
            if skip and new_func is not None:
                args[0] = args[0].with_changes(value=new_func)
            result = updated.with_changes(args=args)
            return result.with_changes(func=new_func) if new_func is not None and not skip else result

        message = self._message(cuda_form, new_device, dtype if new_dtype else "kept", import_time) + (" (CPU fallback kept: built at import time)" if import_time else "")
        self.replace(call, transform, message, imports=imports)
        if cuda_form:
            self._drop_import(func)

    def _device_words(self, import_time: bool = False) -> str:
        """The device this rule writes, as written (``--style accelerator``: the device-generic
        expression, never "neuron")."""
        return self.context.module.code_for_node(self._device_expr(self._torch or "torch", '"', import_time))

    def _message(self, cuda_form: bool, new_device: bool, dtype: str, import_time: bool = False) -> str:
        device = self._device_words(import_time)
        if cuda_form:
            kept = dtype not in {"fp16", "missing"}
            return f"torch.cuda.amp.autocast -> torch.autocast(device_type={device}" + (", its dtype kept)" if kept else ", dtype=torch.bfloat16)")
        parts = [f'device_type "cuda" -> {device}'] if new_device else []
        if dtype in {"fp16", "missing"}:
            parts.append("dtype float16 -> torch.bfloat16" if dtype == "fp16" else "dtype=torch.bfloat16 added (the Neuron default is float16)")
        return "autocast: " + ", ".join(parts)

    def _generic_func(self, func: cst.BaseExpression) -> cst.BaseExpression:
        """``th.cuda.amp.autocast`` -> ``th.autocast``; an imported name -> ``<torch>.autocast``."""
        text = dotted(func) or ""
        parts = text.split(".")
        if "cuda" in parts[:-1] and parts.index("cuda") > 0:
            return cst.parse_expression(".".join([*parts[: parts.index("cuda")], "autocast"]))
        return cst.parse_expression(f"{self._torch or 'torch'}.autocast")

    def _device_expr(self, alias: str, quote: str, import_time: bool = False) -> cst.BaseExpression:
        if self.options.style == "accelerator":
            # current_accelerator() is None on a CPU-only host: "cuda" there, as the original had
            # (its CUDA autocast only disabled itself); a guarded import-time form may be short.
            device = (ACCELERATOR_DEVICE_TYPE if import_time else ACCELERATOR_TYPE_OR_CUDA).replace("torch.", f"{alias}.", 1)
        else:
            device = f"{quote}neuron{quote}"
        if import_time:
            return cst.parse_expression(f"{device} if {alias}.accelerator.is_available() else {quote}cpu{quote}")
        return cst.parse_expression(device)

    def _default_fallback(self, call: cst.Call, device: cst.BaseExpression | None) -> None:
        """``def autocast(enabled, device="cuda"): return torch.amp.autocast(device, ...)``: the
        default reaches autocast, where "neuron" raises on a torch without torch-neuronx; a
        default keeps its CPU fallback (callers that pass ``device=`` are unaffected)."""
        if not isinstance(device, cst.Name):
            return
        function = next((a for a in self.ancestors(call) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
        params = function.params if function is not None else None
        param = next(
            (p for p in (*params.params, *params.kwonly_params) if p.name.value == device.value),
            None,
        ) if params is not None else None
        if param is None or param.default is None or device_kind(param.default) != "cuda":
            return
        alias = self._torch or "torch"
        imports = () if self._torch else (ImportSpec("torch"),)
        quote = _quote_of(param.default)

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            if not isinstance(updated, cst.SimpleString):
                return updated
            value = string_value(updated) or ""
            neuron = value.replace("cuda", "neuron", 1) if self.options.style != "accelerator" else None
            device_text = f"{quote}{neuron}{quote}" if neuron else ACCELERATOR_DEVICE_TYPE.replace("torch.", f"{alias}.", 1)
            return cst.parse_expression(f"{device_text} if {alias}.accelerator.is_available() else {quote}cpu{quote}")

        self.replace(
            param.default,
            transform,
            f'autocast device default "cuda" -> {"the accelerator type" if self.options.style == "accelerator" else "neuron"} '
            'when an accelerator is available, else "cpu" (the CPU fallback kept)',
            imports=imports,
        )

    def _drop_import(self, func: cst.BaseExpression) -> None:
        for spec in source_imports(func, self.qualified(func)):
            self.drop_import_if_unused(spec)

    # ------------------------------------------------------------------ bare references
    def _bare_reference(self, node: cst.Attribute | cst.Name) -> None:
        parent = self.parent(node)
        if type(parent) is cst.Attribute and (parent.value is node or parent.attr is node):  # type: ignore[union-attr]  # exact type: every name
            return
        if self.qualified(node) == {"torch.cuda.amp"} and not self._in_import(node):
            self._module_reference(node)
            return
        if isinstance(parent, (cst.Call, cst.Decorator)) or not self.qualified(node) & CUDA_AUTOCAST:
            return
        if self._in_import(node):
            return
        if isinstance(parent, cst.Arg):
            call = self.parent(parent)
            if isinstance(call, cst.Call) and self.qualified(call.func) & PARTIAL and call.args and call.args[0] is parent:
                return  # handled as a partial
        if self.options.style == "accelerator":
            # current_accelerator() is None on a CPU-only host: "cuda" there, as before (autocast
            # then disables itself), at import time and in a function alike.
            device = ACCELERATOR_TYPE_OR_CUDA.replace("torch.", f"{self._torch or 'torch'}.", 1)
        else:
            device = '"neuron"'
        partial, imports = self._partial_name()
        alias = self._torch or "torch"
        if not self._torch:
            imports = (*imports, ImportSpec("torch"))
        if self.options.style == "accelerator":  # CUDA's float16 default kept, as for a call
            new = cst.parse_expression(f"{partial}({alias}.autocast, device_type={device})")
            self.replace(node, new, f"torch.cuda.amp.autocast -> partial(torch.autocast, device_type={device})", imports=imports)
            self.mark(node, _KEPT_FP16, code="NRN202")
        else:
            new = cst.parse_expression(f"{partial}({alias}.autocast, device_type={device}, dtype={alias}.bfloat16)")
            self.replace(node, new, "torch.cuda.amp.autocast -> partial(torch.autocast, device_type=neuron, dtype=torch.bfloat16)", imports=imports)
        self._drop_import(node)

    def _in_import(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in self.ancestors(node))

    def _module_reference(self, node: cst.Attribute | cst.Name) -> None:
        """``getattr(torch.cuda.amp, "autocast")`` -> ``getattr(torch.amp, "autocast")``."""
        parts = (dotted(node) or "").split(".")
        if "cuda" in parts and parts.index("cuda") > 0:
            new = ".".join(part for index, part in enumerate(parts) if index != parts.index("cuda"))
            self.replace(node, cst.parse_expression(new), "torch.cuda.amp -> torch.amp (the device-generic AMP module)")
            return
        alias = self._torch or "torch"
        self.replace(
            node,
            cst.parse_expression(f"{alias}.amp"),
            "torch.cuda.amp -> torch.amp (the device-generic AMP module)",
            imports=() if self._torch else (ImportSpec("torch"),),
        )
        self._drop_import(node)

    def _partial_name(self) -> tuple[str, tuple[ImportSpec, ...]]:
        local = imported_as(self.context.module, "functools", "partial")
        if local:
            return local, ()
        module_name = imported_as(self.context.module, "functools", None)
        if module_name:
            return f"{module_name}.partial", ()
        return "functools.partial", (ImportSpec("functools"),)


_KEPT_FP16 = (
    "float16 kept (--style accelerator keeps the CUDA program): on Trainium use dtype=torch.bfloat16 when "
    "torch.accelerator.current_accelerator().type == \"neuron\" (bfloat16 needs no GradScaler)"
)


def _edited_args(
    args: list[cst.Arg],
    skip: int,
    cuda_form: bool,
    device: cst.BaseExpression | None,
    bf16: cst.BaseExpression | None,
) -> list[cst.Arg]:
    """The autocast arguments with the device and dtype set, keeping the call's layout.

    Positional arguments become keywords (a keyword ``device_type=`` may not precede them);
    ``torch.cuda.amp.autocast``'s own dtype is dropped and ``device_type``/``dtype`` go first.
    """
    comma = separator(args)
    order = _CUDA_ORDER if cuda_form else _GENERIC_ORDER
    edited: list[cst.Arg] = list(args[:skip])
    position = 0
    device_index = dtype_index = None
    for arg in args[skip:]:
        name = arg.keyword.value if arg.keyword is not None else order[position]
        if arg.keyword is None:
            position += 1
        arg = as_keyword(arg, name)
        if name == "device_type":
            device_index = len(edited)
            arg = arg.with_changes(value=device) if device is not None else arg
        elif name == "dtype":
            dtype_index = len(edited)
            arg = arg.with_changes(value=bf16) if bf16 is not None else arg
        edited.append(arg)
    if cuda_form:
        assert device is not None
        if bf16 is None:  # a dtype kept as written (a variable of this file, or one marked NRN202)
            return insert_args(edited, skip, [keyword_arg("device_type", device)], comma)
        if dtype_index is not None:
            edited = remove_arg(edited, dtype_index)
        return insert_args(edited, skip, [keyword_arg("device_type", device), keyword_arg("dtype", bf16)], comma)
    if dtype_index is None and bf16 is not None:
        at = device_index + 1 if device_index is not None else skip
        edited = insert_args(edited, at, [keyword_arg("dtype", bf16)], comma)
    return edited


def _quote_of(node: cst.BaseExpression | None) -> str:
    if isinstance(node, cst.SimpleString) and string_value(node) is not None:
        return node.quote if len(node.quote) == 1 else '"'
    return '"'
