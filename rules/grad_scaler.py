"""NRN204-NRN207: GradScaler is dropped under bfloat16 (or disabled, or kept and marked)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, cast

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import keyword, positional, with_args
from porter.rules._lib.imports import torch_alias
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.optim import looks_like_optimizer, optimizers_held
from porter.rules._lib.precision import (
    ACCELERATOR_DEVICE_TYPE_OR_CUDA,
    AUTOCAST,
    CUDA_AUTOCAST,
    GRAD_SCALER,
    PARTIAL,
    SCALER_WRAPPERS,
    Fp16Source,
    Inventory,
    autocast_args,
    keyword_arg,
    source_imports,
)
from porter.rules._lib.tree import child_index, enclosing_function, holder_through_choices, visit_original

_REMOVED_METHODS = frozenset({"update", "unscale_"})
_STATE_METHODS = frozenset({"state_dict", "load_state_dict"})
_SCALER_NAME = re.compile(r"(?i)(^|_)(loss_)?scaler$")


@dataclass
class _Binding:
    """One GradScaler the file constructs and the name it is bound to (``scaler``, ``self.scaler``)."""

    call: cst.Call
    statement: cst.SimpleStatementLine | None  # the assignment, when it is a whole line
    text: str | None
    rewrites: list[tuple[str, cst.CSTNode]] = field(default_factory=list)  # (method, node)
    blocked_by: str | None = None  # why uses cannot be rewritten (then the scaler is disabled)
    scope: cst.FunctionDef | None = None  # a local name's function (None: the name is the file's)
    seen: list[cst.CSTNode] = field(default_factory=list)  # every appearance of the name


class GradScalerRule(Rule):
    """Drop GradScaler once every reduced-precision use of the file is bfloat16.

    What it does:
        When the port leaves no float16 in the file (autocast is bfloat16 via NRN201, float16
        choices via NRN203), a GradScaler (``torch.cuda.amp.GradScaler()``,
        ``torch.amp.GradScaler("cuda")``, ``GradScaler(enabled=...)``, imported names) is removed
        and its uses rewritten: ``scaler.scale(loss).backward()`` → ``loss.backward()``,
        ``scaler.step(opt)`` → ``opt.step()``, ``scaler.update()`` and ``scaler.unscale_(opt)``
        removed; gradient clipping stays (NRN204). When the scaler object is used in any other way
        (passed to a function, tested with ``is not None``, saved in a checkpoint, made in a
        wrapper class), the construction becomes ``torch.amp.GradScaler(enabled=False)`` (a
        device the user computes, ``device=get_accelerator().device_name()``, is kept): a
        disabled scaler is an exact pass-through (``scale`` returns the loss, ``step`` calls
        ``optimizer.step()``, ``update``/``unscale_`` do nothing, ``state_dict()`` is ``{}``,
        ``load_state_dict`` ignores old state), so every use keeps working (NRN205). When float16
        remains (a dtype chosen at run time, an autocast dtype from outside the file, a
        HalfTensor, a scaler built only under ``if dtype == torch.float16:`` or enabled by a
        float16 option, ``enabled=args.fp16`` / ``enabled=precision == "fp16"``, or built for
        a precision option, ``if args.precision == "amp":``, in a file with no autocast of its
        own, where that option's dtype is not in view; a deselected rule), the scaler is kept on the ``neuron`` device (a ``"cuda"`` device argument,
        first or ``device=``, is replaced; a ``torch.amp.GradScaler(enabled=...)`` with no device
        gets ``"neuron"``: its default, ``"cuda"``, disables itself on Neuron; the ``"cuda"`` arm of
        a conditional device, ``dev.type if dev.type == "xpu" else "cuda"``, is replaced the same
        way, its other arms kept; a device variable is the user's and is left, never a second device inserted before it, where it would
        become ``init_scale``) and marked with the reason (NRN206). Checkpointed scaler state and loss-scaler wrappers (timm
        ``NativeScaler``, ``loss_scaler(loss, optimizer, clip_grad=..., parameters=...)`` calls)
        get NRN207 markers. A scaler class handed to a name and called later (mmengine's
        ``scaler_type = GradScaler`` … ``scaler_type(init_scale=s)``) becomes
        ``functools.partial(torch.amp.GradScaler, "neuron")`` (every call then builds what the
        direct port builds), kept with NRN206 unless the file's own torch autocasts leave no
        float16 (then ``partial(..., enabled=False)``); it is only marked when the name is used
        other than by calling it (``isinstance``, a class attribute), when the class may be another
        device's (imported per device: ``from torch.npu.amp import GradScaler``), or when it is
        ``torch.amp.GradScaler`` kept for float16 (its callers pass the device).
        Imported per device (``try: from torch.npu.amp import GradScaler`` / ``except ImportError:
        from torch.cuda.amp import GradScaler``, or ``torch.mlu``): the other device's scaler is
        never touched. Kept for float16, the calls stay as they are and the CUDA import line
        becomes ``GradScaler = functools.partial(torch.amp.GradScaler, "neuron")`` (marked only
        when the name is used other than by calling it, or the line imports more); disabled, the
        call keeps its class (``GradScaler(enabled=False)`` is a pass-through on every device);
        removed under bfloat16, the imports go once unused. A table keyed by device type
        (``{"cuda": torch.cuda.amp.GradScaler, "npu": torch.npu.amp.GradScaler}``) gets a
        ``"neuron"`` entry after the ``"cuda"`` one (``functools.partial(torch.amp.GradScaler,
        "neuron")``, ``enabled=False`` under bfloat16), every other entry kept, and an NRN206 note.
        FSDP's ``ShardedGradScaler`` (``torch.distributed.fsdp.sharded_grad_scaler``, composer,
        torchtitan) is a GradScaler with torch.amp's signature (device first, ``"cuda"`` by
        default: it disables itself on Neuron): removed under bfloat16 like the others, kept on
        ``"neuron"`` (``ShardedGradScaler("neuron", ...)``) with NRN206 when float16 remains, and
        disabled as ``ShardedGradScaler(enabled=False)``. With ``--style accelerator`` every device
        written, and every message and marker, is the device-generic expression
        (``getattr(torch.accelerator.current_accelerator(), "type", "cuda")``), never "neuron".

    Why:
        Loss scaling exists for float16's narrow range; bfloat16 has float32's range and needs
        none (PyTorch AMP docs). TorchNeuron implements no kernels for GradScaler's
        ``_amp_foreach_non_finite_check_and_unscale_``/``_amp_update_scale_`` (torch-neuronx source, csrc/amp/autocast_mode.cpp; PyTorch AMP docs:
        CPU fallback), and ``GradScaler.step`` reads the found-inf flag on the host every step.
        ``torch.cuda.amp.GradScaler`` on a machine without CUDA silently disables itself, so an
        unported float16 script would train without loss scaling.

    Before:
        scaler = torch.cuda.amp.GradScaler()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()

    After:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    Safety:
        Safe when no float16 is left (review when the file has no autocast of its own, e.g. a
        scaler wrapper module: then the port assumes the files using it are ported too): the port computes what the float16 script computed with
        scaling cancelled out, minus skipped steps on overflow (bfloat16 does not overflow where
        float16 did). Receiver heuristic: a name or attribute (``scaler``, ``self.scaler``)
        assigned once from a GradScaler constructor in this file (a local name: once in its
        function, whose appearances are the only ones counted); every other appearance of the
        same spelling must be a recognised method call, otherwise the scaler is disabled instead of
        removed. Several scalers in one file decide each on its own (``_Owners``): a float16
        reason on a scaler's construction, or an autocast inside a function where only that
        scaler appears and no value leaves, keeps that scaler only; any other float16 source
        keeps them all. Known misses: a scaler constructed in another module and passed in (its uses
        are left as they are, and stay correct once the constructing file is ported); wrapper
        calls are recognised by a callee named ``*scaler`` with a loss and an optimizer (not a
        function of this file that never calls ``.backward``: a scaler factory). What a
        name holds for the per-device cases: the callee's qualified names (every import that may
        bind it, ``porter.engine.fastcst.names``, star imports of torch modules included); a
        name that is also another module's ``*.GradScaler`` (not torch's CUDA/amp/FSDP classes)
        is that device's. A device table is a dict literal with string keys holding a GradScaler
        class as a value; the device type it is looked up with is assumed to be the port's.
    """

    code: ClassVar[str] = "NRN204"
    name: ClassVar[str] = "grad-scaler"
    summary: ClassVar[str] = "GradScaler removed under bfloat16: scale(loss).backward() -> loss.backward(), step(opt) -> opt.step()"
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("GradScaler", "Scaler(", "loss_scaler")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN205": "GradScaler kept as a disabled pass-through (enabled=False), or kept on the neuron device for float16",
        "NRN206": "GradScaler kept because float16 remains in the file: review marker",
        "NRN207": "scaler state in checkpoints / loss-scaler wrapper (timm NativeScaler): review marker",
    }
    order: ClassVar[int] = 40

    def visit_Module(self, node: cst.Module) -> None:
        self._torch = torch_alias(node)
        # No autocast in this file (a scaler wrapper module): dropping the scaler relies on the
        # files that use it being ported to bfloat16 too, so those edits are review items.
        # (A whole word: `fp8_autocast_enabled=` is no autocast; review round 6.)
        self._cross_file = Safety.REVIEW if not _AUTOCAST_WORD.search(self.context.text) else None
        finder = _ScalerFinder(self)
        visit_original(child_index(self), node, finder)
        self._bindings = {id(binding.call): binding for binding in finder.bindings}
        self._marked: set[int] = set()
        self._ported_imports: set[int] = set()
        self._port_class_refs(node)
        if not finder.bindings:
            return
        blockers = self._shared_inventory(node).blockers(self.options.selects)
        owners = _Owners(self, finder.bindings)
        for binding in finder.bindings:
            own = owners.reasons(binding, blockers)
            if own:
                self._keep_for_fp16(binding, own[0].line, own[0].what)
            elif binding.blocked_by is not None or binding.statement is None:
                self._disable(binding, finder.state_uses.get(binding.text or "", []))
            else:
                self._remove(binding)

    def _shared_inventory(self, module: cst.Module) -> Inventory:
        return self.analysis(Inventory)

    # ------------------------------------------------------------------ the three outcomes
    def _keep_for_fp16(self, binding: _Binding, line: int, what: str) -> None:
        call = binding.call
        device = self._device_text()
        quote = '"'
        func_names = self.qualified(call.func)
        gate = self._fp16_gate(call)
        gated = f", enabled only when {gate.split(' ==')[0]} is float16" if gate else ""
        device_arg = _device_arg(call) if func_names & _AMP_SCALER else None
        others = _other_devices(func_names)
        if others:
            # Imported per device (``from torch.npu.amp import GradScaler`` or torch.cuda.amp's):
            # the call stays the other device's; the CUDA import is what is ported.
            self._port_scaler_import(call, others, what, line)
        elif func_names & _CUDA_SCALER and device_arg is None:
            new_func = self._amp_scaler_func()

            def to_neuron(updated: cst.CSTNode) -> cst.CSTNode:
                assert isinstance(updated, cst.Call)
                head = cst.Arg(cst.parse_expression(device if self.options.style == "accelerator" else f"{quote}neuron{quote}"))
                return _gated(with_args(updated.with_changes(func=new_func), [head, *updated.args]), gate)

            on = f"the device {device}" if self.options.style == "accelerator" else "the neuron device"
            self.replace(call, to_neuron, f"torch.cuda.amp.GradScaler -> torch.amp.GradScaler on {on} (float16 kept{gated})", code="NRN205", imports=self._torch_import())
            for spec in source_imports(call.func, func_names):
                self.drop_import_if_unused(spec, code="NRN205")
        else:
            # The device argument is replaced, never a second one inserted (a prepended device
            # would push the user's into init_scale); a variable device is the user's: kept.
            cuda_at = call.args.index(device_arg) if device_arg is not None and string_value(device_arg.value) == "cuda" else None
            # torch.amp.GradScaler's device defaults to "cuda": a kept scaler without one would
            # disable itself on Neuron and float16 would train unscaled.
            implicit = device_arg is None and not any(arg.star for arg in call.args)
            # ``dev.type if dev.type == "xpu" else "cuda"``: the user's choice stays, the "cuda" arm
            # (a literal, like GradScaler("cuda")) is ported, or the scaler disables itself on Neuron.
            arm_at = call.args.index(device_arg) if device_arg is not None and _cuda_arms(device_arg.value) else None
            cuda_first = cuda_at is not None or arm_at is not None
            new_device = cst.parse_expression(device if self.options.style == "accelerator" else '"neuron"')

            def port(updated: cst.CSTNode) -> cst.CSTNode:
                assert isinstance(updated, cst.Call)
                args = list(updated.args)
                if cuda_at is not None:
                    args[cuda_at] = args[cuda_at].with_changes(value=new_device)
                elif arm_at is not None:
                    args[arm_at] = args[arm_at].with_changes(value=_port_arms(args[arm_at].value, new_device))
                elif implicit:
                    return _gated(with_args(updated, [cst.Arg(new_device), *args]), gate)
                return _gated(updated.with_changes(args=args), gate)

            if cuda_first or implicit or gate:
                spelled = (dotted(call.func) or "GradScaler").rsplit(".", 1)[-1]
                was = f"{spelled}()" if implicit else f'{spelled}("cuda")'
                now = device if self.options.style == "accelerator" else '"neuron"'
                self.replace(call, port, f"{was} -> {spelled}({now}) (float16 kept{gated})", code="NRN205")
        statement = self.statement_of(call)
        if id(statement) not in self._marked:  # one marker per line (a scaler chosen by `... if v else ...`)
            self._marked.add(id(statement))
            self.mark(call, f"GradScaler kept: float16 remains ({what}, line {line}); make it bfloat16, then drop the scaler", code="NRN206")

    def _fp16_gate(self, call: cst.Call) -> str | None:
        """``amp_dtype == torch.float16`` when the file's autocasts all take their dtype from one
        variable set before the scaler in the same function, and the scaler has no ``enabled``
        of its own: the kept scaler then scales only what float16 needs (a bfloat16 run gets a
        pass-through scaler, as with ``enabled=False``)."""
        if any(arg.star or arg.keyword is not None and arg.keyword.value == "enabled" for arg in call.args):
            return None
        plain = [arg for arg in call.args if arg.keyword is None]
        if len(plain) > 1 or plain and string_value(plain[0].value) is None:
            return None  # positional init_scale & co.: enabled's position is not in view
        finder = _AutocastDtypes(self.qualified)
        visit_original(child_index(self), self.context.module, finder)
        if len(finder.texts) != 1:
            return None
        name = next(iter(finder.texts))
        scope = self.enclosing_function(call)
        line = self.position(call)[0]
        for target in finder.targets.get(name, []):
            if self.enclosing_function(target) is scope and self.position(target)[0] < line:
                return f"{name} == {self._torch or 'torch'}.float16"
        return None

    def enclosing_function(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return next((a for a in self.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)

    def _disable(self, binding: _Binding, state_uses: list[cst.CSTNode]) -> None:
        why = binding.blocked_by or "it is not assigned directly to a name"
        call = binding.call
        names = self.qualified(call.func)
        # Another device's class (imported per device) or FSDP's: the class is kept, only disabled.
        own_class = bool(_other_devices(names) or names & _SHARDED)
        func = call.func if own_class else self._amp_scaler_func()
        device = _device_arg(call) if names & _AMP_SCALER else None
        # A device the user computes (deepspeed's get_accelerator().device_name()) is kept: only
        # a "cuda" literal, which a disabled scaler does not need, is dropped.
        kept = [] if device is None or string_value(device.value) is not None else [call.args.index(device)]

        def disable(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            now = [updated.args[index].with_changes(comma=cst.MaybeSentinel.DEFAULT) for index in kept]
            return with_args(updated.with_changes(func=updated.func if own_class else func, args=[]), [*now, keyword_arg("enabled", cst.Name("False"))])

        spelled = (dotted(call.func) or "GradScaler").rsplit(".", 1)[-1] if own_class else "GradScaler"
        self.replace(
            binding.call,
            disable,
            f"{spelled} -> {spelled}(enabled=False), a pass-through under bfloat16 (not removed: {why})",
            code="NRN205",
            safety=self._cross_file,
            imports=() if own_class else self._torch_import(),
        )
        for spec in () if own_class else source_imports(binding.call.func, names):
            self.drop_import_if_unused(spec, code="NRN205")
        for use in state_uses:
            self.mark(use, "GradScaler is disabled under bfloat16: its state_dict() is {}; drop it from checkpoints", code="NRN207")

    def _remove(self, binding: _Binding) -> None:
        assert binding.statement is not None
        removals: list[cst.SimpleStatementLine] = [binding.statement]
        for method, node in binding.rewrites:
            if method in _REMOVED_METHODS:
                removals.append(node)  # type: ignore[arg-type]
        self._remove_lines(removals, binding)
        for method, node in binding.rewrites:
            if method == "scale":
                self.replace(node, _unwrap_scale(self._needs_parens(node)), "scaler.scale(loss) -> loss (no loss scaling under bfloat16)", safety=self._cross_file, drops_calls=True)
            elif method == "step":
                self.replace(node, _step_on_optimizer, "scaler.step(optimizer) -> optimizer.step()", safety=self._cross_file)
        for spec in source_imports(binding.call.func, self.qualified(binding.call.func)):
            self.drop_import_if_unused(spec)

    def _remove_lines(self, lines: list[cst.SimpleStatementLine], binding: _Binding) -> None:
        """Remove whole lines; a block left empty keeps a ``pass``."""
        removed = {id(line) for line in lines}
        done: set[int] = set()
        for line in lines:
            if id(line) in done:
                continue
            done.add(id(line))
            message = "GradScaler removed: bfloat16 needs no loss scaling" if line is binding.statement else "scaler call removed (no loss scaling under bfloat16)"
            block = self.parent(line)
            siblings = list(getattr(block, "body", ()))
            if siblings and all(id(sibling) in removed for sibling in siblings) and line is siblings[-1]:
                self.replace(line, lambda n: n.with_changes(body=[cst.Pass()]), message, safety=self._cross_file)  # type: ignore[attr-defined]
            else:
                self.remove_statement(line, message, safety=self._cross_file)

    def _needs_parens(self, scale_call: cst.CSTNode) -> bool:
        parent = self.parent(scale_call)
        return isinstance(parent, (cst.Attribute, cst.Subscript)) or (isinstance(parent, cst.Call) and parent.func is scale_call)

    def _amp_scaler_func(self) -> cst.BaseExpression:
        return cst.parse_expression(f"{self._torch or 'torch'}.amp.GradScaler")

    def _torch_import(self) -> tuple[ImportSpec, ...]:
        return () if self._torch else (ImportSpec("torch"),)

    def _device_text(self) -> str:
        return ACCELERATOR_DEVICE_TYPE_OR_CUDA.replace("torch.", f"{self._torch or 'torch'}.", 1)

    def _device_words(self) -> str:
        """The device a kept scaler is built on, as this port writes it (``--style accelerator``:
        the device-generic expression)."""
        return self._device_text() if self.options.style == "accelerator" else '"neuron"'

    # ------------------------------------------------------------------ imported per device
    def _port_scaler_import(self, call: cst.Call, others: list[str], what: str, line: int) -> None:
        """``try: from torch.npu.amp import GradScaler / except ImportError: from torch.cuda.amp
        import GradScaler``: the call builds whichever class the host imported, so it is kept
        (the other device's scaler untouched); the CUDA import, a whole line of its own, becomes
        ``GradScaler = functools.partial(torch.amp.GradScaler, "neuron")``: on Neuron the call
        then builds what the direct port builds. Only marked when the name is used other than
        by calling it (a partial is not a class) or the import line holds more."""
        statement = self.statement_of(call)
        if id(statement) in self._marked:
            return
        self._marked.add(id(statement))
        local = dotted(call.func) or "GradScaler"
        imports = self._cuda_scaler_imports(call)
        device = self._device_text() if self.options.style == "accelerator" else '"neuron"'
        where = ", ".join(others)
        for line_node, alias in imports:
            if id(line_node) in self._ported_imports:
                continue
            self._ported_imports.add(id(line_node))
            torch = self._torch or "torch"
            new = cst.parse_statement(f"{local} = functools.partial({torch}.amp.GradScaler, {device})")
            assert isinstance(new, cst.SimpleStatementLine)
            self.replace(line_node, lambda n, body=new.body: n.with_changes(body=body),  # type: ignore[attr-defined,misc]
                         f"{alias} (imported per device, beside {where}) -> functools.partial(torch.amp.GradScaler, {device}): "
                         "the other devices' scalers are kept", code="NRN205", safety=Safety.REVIEW,
                         imports=(ImportSpec("functools"), *self._torch_import()))
        kept = f"the CUDA import now builds torch.amp.GradScaler({device}, ...)" if imports else (
            f"its torch.cuda.amp import disables itself on Neuron: bind {local} to torch.amp.GradScaler({device}, ...) there")
        self.mark(call, f"GradScaler kept: float16 remains ({what}, line {line}); {local} may be another device's ({where}), "
                  f"kept as it is; {kept}. Make it bfloat16, then drop the scaler", code="NRN206")

    def _cuda_scaler_imports(self, call: cst.Call) -> list[tuple[cst.SimpleStatementLine, str]]:
        """The lines ``from torch.cuda.amp import GradScaler`` (or torch.amp's) that bind the
        callee, each a whole line of one name, when the name is only ever called in the file."""
        names = self.qualified(call.func) & GRAD_SCALER
        specs = source_imports(call.func, names)
        local = dotted(call.func)
        if not specs or local is None or "." in local or not self._only_calls(local):
            return []
        found = []
        for node in child_index(self).walk(self.context.module):
            if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar) or len(node.names) != 1:
                continue
            alias = node.names[0]
            text = f"from {dotted(node.module) if node.module is not None else ''} import {dotted(alias.name)}"
            bound = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else dotted(alias.name)
            line = self.parent(node)
            if bound != local or not any(str(spec).startswith(text) for spec in specs) or node.relative:
                continue
            if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
                found.append((line, text))
        return found

    def _only_calls(self, local: str) -> bool:
        """Whether every use of the name (outside import statements) calls it."""
        for node in child_index(self).walk(self.context.module):
            if not isinstance(node, cst.Name) or node.value != local:
                continue
            parent = self.parent(node)
            if isinstance(parent, (cst.ImportAlias, cst.AsName)) or isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if not (isinstance(parent, cst.Call) and parent.func is node):
                return False
        return True

    # ------------------------------------------------------------------ the class as a value
    def _port_class_refs(self, module: cst.Module) -> None:
        """``scaler_type = GradScaler`` (mmengine), called later as ``scaler_type(init_scale=...)``:
        the class becomes ``functools.partial(torch.amp.GradScaler, "neuron")``, so every call
        builds what the direct port builds (the device first, the caller's arguments after it).
        Kept, with the NRN206 marker, unless the file's own torch autocasts leave no float16
        (then ``enabled=False``). A name that is used other than by calling it (``isinstance``,
        passed on, returned) is only marked: a partial is not a class."""
        for node in cast("list[cst.Name | cst.Attribute]", child_index(self).find(module, cst.Name, cst.Attribute)):
            if not self.qualified(node) & GRAD_SCALER:
                continue
            entry = self.parent(node)
            if isinstance(entry, cst.DictElement) and entry.value is node:
                self._port_table_entry(module, entry)
                continue
            held = holder_through_choices(self, node)
            if held is None or not isinstance(held[1], cst.Assign) or len(held[1].targets) != 1:
                continue  # a call, an import, an annotation, a test: not the class handed to a name
            target = held[1].targets[0].target
            text = dotted(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
            if text is None:
                continue
            blockers = self._shared_inventory(module).blockers(self.options.selects)
            reason = (f"{blockers[0].what}, line {blockers[0].line}" if blockers
                      else None if self._own_autocast(module) else "the file has no torch autocast of its own: the files using it choose the dtype")
            others = sorted(name.rsplit(".", 1)[0] for name in self.qualified(node) - GRAD_SCALER)
            device = self._device_words()
            if others:  # imported per device (``if is_npu_available(): from torch.npu.amp import GradScaler``)
                self.mark(node, f"GradScaler assigned to {text} is torch.cuda.amp's here unless another device's is imported "
                          f"({', '.join(others)}); torch.cuda.amp's disables itself on Neuron: add a Neuron choice that builds "
                          f"torch.amp.GradScaler({device}, ...)", code="NRN206")
                continue
            amp_api = not self.qualified(node) & _CUDA_SCALER  # torch.amp's: its callers pass the device first
            if self.qualified(node) & _SHARDED and self._only_called(target, text):
                # FSDP's class, device first like torch.amp's: the partial keeps the class.
                self._partial(node, text, reason, device_first=True, func=self.context.module.code_for_node(node))
                continue
            if amp_api and reason is not None:
                self.mark(node, f'torch.amp.GradScaler assigned to {text}: its device defaults to "cuda" (it disables itself on '
                          f"Neuron): pass {device} first where {text} is called", code="NRN206")
                continue
            if not self._only_called(target, text):
                on = "the accelerator" if self.options.style == "accelerator" else "the neuron device"
                self.mark(node, f"GradScaler class assigned to {text} and used as a value: build it on {on} "
                          f"(torch.amp.GradScaler({device}, ...)); torch.cuda.amp.GradScaler disables itself without CUDA", code="NRN206")
                continue
            self._partial(node, text, reason, device_first=not amp_api)

    def _port_table_entry(self, module: cst.Module, entry: cst.DictElement) -> None:
        """``{"cuda": torch.cuda.amp.GradScaler, "npu": torch.npu.amp.GradScaler}[device_type]``:
        the table is looked up by the device type, which is ``"neuron"`` once ported; a
        ``"neuron"`` entry is added after the ``"cuda"`` one (``functools.partial(torch.amp.GradScaler,
        "neuron")``, with ``enabled=False`` when the file's own autocasts leave no float16) and
        every other entry is kept. A table not keyed by ``"cuda"``, or with a ``"neuron"`` key
        already, is only marked."""
        table = self.parent(entry)
        if not isinstance(table, cst.Dict) or id(table) in self._marked:
            return
        self._marked.add(id(table))
        keys = [string_value(e.key) if isinstance(e, cst.DictElement) else None for e in table.elements]
        blockers = self._shared_inventory(module).blockers(self.options.selects)
        reason = (f"{blockers[0].what}, line {blockers[0].line}" if blockers
                  else None if self._own_autocast(module) else "the file has no torch autocast of its own: the files using it choose the dtype")
        # Also under --style accelerator: the device type looked up there is "neuron" on Trainium.
        cuda_entry = string_value(entry.key) == "cuda" and "neuron" not in keys
        torch = self._torch or "torch"
        built = f'functools.partial({torch}.amp.GradScaler, "neuron"{", enabled=False" if reason is None else ""})'
        if cuda_entry:
            value = cst.parse_expression(built)
            at = table.elements.index(entry)

            def add(updated: cst.CSTNode) -> cst.CSTNode:
                assert isinstance(updated, cst.Dict)
                elements = list(updated.elements)
                before = elements[at]
                new = cst.DictElement(cst.SimpleString('"neuron"'), value, comma=before.comma)
                comma = before.comma if isinstance(before.comma, cst.Comma) else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                elements[at : at + 1] = [before.with_changes(comma=comma), new]
                return updated.with_changes(elements=elements)

            what = "float16 kept: " + reason if reason is not None else "enabled=False, a pass-through under bfloat16"
            self.replace(table, add, f'GradScaler table keyed by device: "neuron" entry added ({what}); the other devices\' entries kept',
                         code="NRN205", safety=Safety.REVIEW, imports=(ImportSpec("functools"), *self._torch_import()))
        done = f'its "neuron" entry is {built}' if cuda_entry else (
            f'add a "neuron" entry: {built}' if "neuron" not in keys
            else 'its "neuron" entry must build torch.amp.GradScaler("neuron")')
        self.mark(entry, f"GradScaler table keyed by device: the CUDA entry stays for CUDA hosts (it disables itself on Neuron); {done}"
                  + (f" (float16 kept: {reason}; make it bfloat16, then drop the scaler)" if reason is not None else ""), code="NRN206")

    def _partial(self, node: cst.Name | cst.Attribute, text: str, reason: str | None, *, device_first: bool, func: str | None = None) -> None:
        torch = self._torch or "torch"
        func = func or f"{torch}.amp.GradScaler"
        # torch.cuda.amp's first positional is init_scale: the device goes first so it stays so
        device = self._device_text() if self.options.style == "accelerator" else '"neuron"'
        extra = ", ".join([device] * device_first + ["enabled=False"] * (reason is None))
        new = cst.parse_expression(f"functools.partial({func}, {extra})")
        what = f"the device {device} (float16 kept: {reason})" if reason is not None else "enabled=False, a pass-through under bfloat16"
        own = func != f"{torch}.amp.GradScaler"  # the class is kept (FSDP's): its import stays
        self.replace(node, lambda _n: new, f"GradScaler class assigned to {text} -> functools.partial({func if own else 'torch.amp.GradScaler'}, ...) on {what}",
                     code="NRN205", safety=Safety.REVIEW, imports=(ImportSpec("functools"), *(() if own else self._torch_import())))
        for spec in () if own else source_imports(node, self.qualified(node)):
            self.drop_import_if_unused(spec, code="NRN205")
        if reason is not None:
            self.mark(node, f"GradScaler kept: float16 may remain ({reason}); make it bfloat16, then drop the scaler", code="NRN206")

    def _own_autocast(self, module: cst.Module) -> bool:
        return any(isinstance(n, cst.Call) and self.qualified(n.func) & (AUTOCAST | CUDA_AUTOCAST) for n in child_index(self).walk(module))

    def _only_called(self, target: cst.BaseExpression, text: str) -> bool:
        """Whether every other appearance of the name (in its function, or the file for an
        attribute) is a call of it or an assignment to it."""
        if isinstance(next((a for a in self.ancestors(target) if isinstance(a, (cst.FunctionDef, cst.ClassDef))), None), cst.ClassDef):
            return False  # a class attribute: read through self/cls/the class, not in view by name
        scope = enclosing_function(self, target) if "." not in text else None
        for node in child_index(self).walk(scope or self.context.module):
            if not isinstance(node, (cst.Name, cst.Attribute)) or node is target or dotted(node) != text:
                continue
            parent = self.parent(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Call) and parent.func is node or isinstance(parent, cst.AssignTarget):
                continue
            if _tested(self, node) and not _compared(self, node):
                continue  # ``if scaler_type is None:`` reads a partial as it read the class
            return False
        return True

    # ------------------------------------------------------------------ wrappers
    def _file_factory(self, text: str) -> bool:
        """Whether ``text`` names a module-level def of this file that never calls ``.backward``
        (a scaler factory, ``make_scaler(device_type, fp16)``; a loss-scaler wrapper backpropagates)."""
        if "." in text:
            return False
        defs = [s for s in self.context.module.body if isinstance(s, cst.FunctionDef) and s.name.value == text]
        return len(defs) == 1 and not _calls_backward(defs[0], self)

    def visit_Call(self, node: cst.Call) -> None:
        wrapper = self.qualified(node.func) & SCALER_WRAPPERS
        if wrapper:
            name = sorted(wrapper)[0].rsplit(".", 1)[-1]
            self.mark(node, f"timm {name} wraps a CUDA loss scaler; under bf16 use loss.backward(), clip, optimizer.step()", code="NRN207")
            return
        if self._bindings:
            return  # the file builds its own GradScaler (a local wrapper class): ported above
        text = dotted(node.func)
        if text is None or not _SCALER_NAME.search(text.split(".")[-1]):
            return
        plain = [arg for arg in node.args if arg.keyword is None and not arg.star]
        keywords = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        if self._file_factory(text):
            return  # ``make_scaler(device_type, fp16)``: a def of this file that builds a scaler, not a wrapper
        if len(plain) >= 2 or keywords & {"clip_grad", "parameters"}:
            self.mark(node, f"loss-scaler wrapper {text}(loss, optimizer, ...): under bf16 use loss.backward(), clip, optimizer.step()", code="NRN207")


def _calls_backward(node: cst.CSTNode, rule: Rule) -> bool:
    return any(isinstance(n, cst.Attribute) and n.attr.value == "backward" for n in child_index(rule).walk(node))


def _unwrap_scale(parens: bool) -> Callable[[cst.CSTNode], cst.CSTNode]:
    def transform(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.Call)
        value = updated.args[0].value
        if parens and not _atomic(value):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return value

    return transform


def _step_on_optimizer(updated: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(updated, cst.Call)
    optimizer = updated.args[0].value
    if not _atomic(optimizer):
        optimizer = optimizer.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    rest = list(updated.args[1:])
    call = updated.with_changes(func=cst.Attribute(value=optimizer, attr=cst.Name("step")), args=[])
    return with_args(call, rest) if rest else call


def _atomic(node: cst.BaseExpression) -> bool:
    return bool(node.lpar) or isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString))


_AUTOCAST_WORD = re.compile(r"\bautocast\b")


class _ScalerFinder(cst.CSTVisitor):
    """Finds GradScaler constructions, their bindings and every appearance of each binding."""

    def __init__(self, rule: GradScalerRule) -> None:
        super().__init__()
        self.rule = rule
        self.bindings: list[_Binding] = []
        self.state_uses: dict[str, list[cst.CSTNode]] = {}
        self._appearances: dict[str, list[cst.CSTNode]] = {}
        self._params: dict[str, list[cst.Param]] = {}
        self._globals: set[str] = set()  # names a function declares global / nonlocal

    def visit_Call(self, node: cst.Call) -> None:
        if self.rule.qualified(node.func) & GRAD_SCALER:
            self.bindings.append(self._bind(node))

    def visit_Param(self, node: cst.Param) -> None:
        self._params.setdefault(node.name.value, []).append(node)

    def visit_Global(self, node: cst.Global) -> None:
        self._globals.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._globals.update(item.name.value for item in node.names)

    def visit_Name(self, node: cst.Name) -> None:
        parent = self.rule.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        if isinstance(parent, cst.Param) or (isinstance(parent, cst.Arg) and parent.keyword is node):
            return
        self._appearances.setdefault(node.value, []).append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        text = dotted(node)
        if text is not None and "." in text:
            self._appearances.setdefault(text, []).append(node)

    def _bind(self, call: cst.Call) -> _Binding:
        parent = self.rule.parent(call)
        statement = self.rule.parent(parent) if parent is not None else None
        target: cst.CSTNode | None = None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = parent.targets[0].target
        elif isinstance(parent, cst.AnnAssign):
            target = parent.target
        text = dotted(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
        whole_line = isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
        if text is None:
            # One arm of a choice assigned to a name (`self.scaler = Closure() if c else GradScaler()`):
            # not removable, but that name's scaler, so scalers built into it share one decision
            # (review round 6, W14: composer's constructor scaler was disabled, fit()'s kept).
            held = holder_through_choices(self.rule, call)
            holder = held[1] if held is not None and held[0] is not call else None
            chosen = holder.targets[0].target if isinstance(holder, cst.Assign) and len(holder.targets) == 1 else None
            chosen_text = dotted(chosen) if isinstance(chosen, (cst.Name, cst.Attribute)) else None
            return _Binding(call=call, statement=None, text=chosen_text, blocked_by="it is not assigned directly to a name")
        return _Binding(call=call, statement=statement if whole_line else None, text=text, blocked_by=None)  # type: ignore[arg-type]

    def leave_Module(self, original_node: cst.Module) -> None:
        for binding in self.bindings:
            if binding.text and "." not in binding.text and binding.text not in self._globals:
                binding.scope = enclosing_function(self.rule, binding.call)
        texts = [(binding.text, binding.scope) for binding in self.bindings if binding.text]
        for binding in self.bindings:
            if binding.text and texts.count((binding.text, binding.scope)) > 1:
                binding.blocked_by = binding.blocked_by or f"{binding.text} is constructed more than once"
            if binding.text:
                self._classify(binding)

    def _classify(self, binding: _Binding) -> None:
        text = binding.text
        assert text is not None
        if any(self._in_scope(param, binding) for param in self._params.get(text, []) if "." not in text):
            binding.blocked_by = binding.blocked_by or f"a parameter is also named {text}"
        for node in self._appearances.get(text, []):
            if not self._in_scope(node, binding):
                continue  # another function's variable of the same name
            binding.seen.append(node)
            if self._is_target(node, binding):
                continue
            method, where = self._method_use(node)
            if method in _STATE_METHODS:
                self.state_uses.setdefault(text, []).append(where)
                binding.blocked_by = binding.blocked_by or "its state is saved in checkpoints"
            elif method is None:
                binding.blocked_by = binding.blocked_by or f"{text} is passed on or tested as a value"
            else:
                binding.rewrites.append((method, where))

    def _in_scope(self, node: cst.CSTNode, binding: _Binding) -> bool:
        ancestors = list(self.rule.ancestors(node))
        if binding.scope is not None:
            return any(a is binding.scope for a in ancestors)
        # The file's name: not inside a function whose own scaler binds the same name locally
        # (that one is another variable; counting it would block this one only until it is gone).
        shadows = [b.scope for b in self.bindings if b.text == binding.text and b.scope is not None]
        return not any(a is scope for scope in shadows for a in ancestors)

    def _is_target(self, node: cst.CSTNode, binding: _Binding) -> bool:
        """Whether ``node`` is assigned to; any assignment but the construction blocks removal."""
        parent = self.rule.parent(node)
        if isinstance(parent, cst.AssignTarget):
            assign = self.rule.parent(parent)
        elif isinstance(parent, (cst.AnnAssign, cst.AugAssign, cst.For, cst.AsName)) and getattr(parent, "target", getattr(parent, "name", None)) is node:
            assign = parent
        else:
            return False
        if assign is not self.rule.parent(binding.call):
            binding.blocked_by = binding.blocked_by or f"{binding.text} is reassigned"
        return True

    def _method_use(self, node: cst.CSTNode) -> tuple[str | None, cst.CSTNode]:
        """(method, node to rewrite) for ``scaler.method(...)``; (None, node) for anything else."""
        attribute = self.rule.parent(node)
        if not isinstance(attribute, cst.Attribute) or attribute.value is not node:
            return None, node
        call = self.rule.parent(attribute)
        if not isinstance(call, cst.Call) or call.func is not attribute:
            return None, node
        method = attribute.attr.value
        if method in _STATE_METHODS:
            return method, call
        if any(arg.star or arg.keyword is not None for arg in call.args):
            return None, node
        if method == "scale" and len(call.args) == 1:
            return method, call
        if method == "step" and len(call.args) >= 1:
            return method, call
        if method in _REMOVED_METHODS:
            expr = self.rule.parent(call)
            line = self.rule.parent(expr) if isinstance(expr, cst.Expr) else None
            if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
                return method, line
        return None, node


_CUDA_SCALER = frozenset({"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"})
_AMP_SCALER = GRAD_SCALER - _CUDA_SCALER  # device first (FSDP's ShardedGradScaler too)
_SHARDED = frozenset({"torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler"})


def _other_devices(names: set[str]) -> list[str]:
    """The modules of the other devices' scalers a name may also be (``torch.npu.amp``, ``torch.mlu.amp``):
    the callee's qualified names that are a ``GradScaler`` but not one of torch's CUDA/amp classes."""
    return sorted(name.rsplit(".", 1)[0] for name in names - GRAD_SCALER if name.endswith(".GradScaler"))


def _device_arg(call: cst.Call) -> cst.Arg | None:
    """torch.amp.GradScaler's device: ``device=`` or the first positional argument. A number
    first is torch.cuda.amp's ``init_scale`` (a name imported from either module)."""
    keyword = next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == "device"), None)
    if keyword is not None:
        return keyword
    first = positional(call, 0)
    if first is None or isinstance(first.value, (cst.Integer, cst.Float, cst.BinaryOperation, cst.UnaryOperation)):
        return None
    return first


def _gated(call: cst.Call, gate: str | None) -> cst.Call:
    if gate is None:
        return call
    return with_args(call, [*call.args, keyword_arg("enabled", cst.parse_expression(gate))])


class _AutocastDtypes(cst.CSTVisitor):
    """The variable each autocast of the file takes its dtype from, and where each is assigned."""

    def __init__(self, qualify: Callable[[cst.CSTNode], set[str]]) -> None:
        super().__init__()
        self.qualify = qualify
        self.texts: set[str] = set()
        self.targets: dict[str, list[cst.CSTNode]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualify(node.func)
        if names & (AUTOCAST | CUDA_AUTOCAST):
            dtype = autocast_args(node.args, bool(names & CUDA_AUTOCAST)).dtype
            text = dotted(dtype) if isinstance(dtype, (cst.Name, cst.Attribute)) else None
            self.texts.add(text or "")

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        text = dotted(node.target) if isinstance(node.target, (cst.Name, cst.Attribute)) else None
        if text:
            self.targets.setdefault(text, []).append(node)


def _cuda_arms(value: cst.BaseExpression) -> bool:
    """Whether a conditional device argument has a literal ``"cuda"`` arm (nested conditionals too)."""
    if not isinstance(value, cst.IfExp):
        return False
    return any(string_value(arm) == "cuda" or _cuda_arms(arm) for arm in (value.body, value.orelse))


def _port_arms(value: cst.BaseExpression, device: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(value, cst.IfExp):
        return value.with_changes(body=_port_arms(value.body, device), orelse=_port_arms(value.orelse, device))
    return device if string_value(value) == "cuda" else value


class _Owners:
    """Which of the file's GradScalers a float16 source keeps (each scaler decides on its own).

    Heuristic: a reason found on a scaler's own construction (``enabled=args.fp16``, built under
    ``if args.fp16:``) is that scaler's alone. An autocast (the call, or the dtype it is given)
    inside a function where only some scalers appear (built, stepped, scaled) is theirs, unless
    values can leave that function (a ``return``/``yield`` of a value, a ``global``). Every other
    source keeps every scaler of the file: one at module level or in a function no scaler appears
    in, and any float16 made outside an autocast (``.half()``, ``.to(torch.float16)``,
    ``set_default_dtype``, a dtype variable), which may change a model another scaler's loss
    comes from. Known miss: an autocast whose loss is returned through an object the function
    mutates (then counted for that function's scalers only)."""

    def __init__(self, rule: GradScalerRule, bindings: list[_Binding]) -> None:
        self.rule = rule
        self.bindings = bindings
        self.calls = {id(binding.call) for binding in bindings}
        self.touched = {id(b.call): {id(enclosing_function(rule, n)) for n in (b.call, *b.seen)} for b in bindings}
        self.anywhere: set[int] = set().union(*self.touched.values())
        self._exits: dict[int, bool] = {}

    def reasons(self, binding: _Binding, blockers: list[Fp16Source]) -> list[Fp16Source]:
        """The float16 sources that keep this scaler (empty: it can go). Scalers built into one
        name (``self.scaler = GradScaler()`` in ``__init__`` and again in ``fit``) are one scaler
        over time, with the same uses: a reason of one keeps them all."""
        own = [source for source in blockers if self.owns(binding, source)]
        same = [b for b in self.bindings if b is not binding and b.text and b.text == binding.text and b.scope is binding.scope]
        return own + [source for source in blockers if source not in own and any(self.owns(b, source) for b in same)]

    def owns(self, binding: _Binding, source: Fp16Source) -> bool:
        node = source.node
        if node is None:
            return True
        if id(node) in self.calls:
            return node is binding.call
        function = enclosing_function(self.rule, node)
        if function is None or id(function) not in self.anywhere or not self._autocast(node) or self._leaves(function):
            return True
        return id(function) in self.touched[id(binding.call)]

    def _autocast(self, node: cst.CSTNode) -> bool:
        """``node`` is an autocast call (or ``partial(autocast, ...)``), or an argument of one."""
        for candidate in (node, *self.rule.ancestors(node)):
            if isinstance(candidate, cst.Call):
                names = self.rule.qualified(candidate.func)
                if names & (AUTOCAST | CUDA_AUTOCAST) or names & PARTIAL and candidate.args and self.rule.qualified(candidate.args[0].value) & (AUTOCAST | CUDA_AUTOCAST):
                    return True
            if isinstance(candidate, cst.BaseStatement):
                return False
        return False

    def _leaves(self, function: cst.FunctionDef) -> bool:
        if id(function) not in self._exits:
            exits = _Exits()
            function.visit(exits)
            self._exits[id(function)] = exits.found
        return self._exits[id(function)]


class _Exits(cst.CSTVisitor):
    """Whether a function hands values out (``return value``, ``yield``) or declares a global."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Return(self, node: cst.Return) -> None:
        self.found = self.found or node.value is not None

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True

    def visit_Global(self, node: cst.Global) -> None:
        self.found = True


def kept_scalers(rule: Rule, blockers: list[Fp16Source]) -> list[tuple[cst.Call, list[cst.Call] | None]]:
    """The GradScaler constructions of the file that float16 keeps, decided as this rule decides
    them, each with the Adam/AdamW constructions it may step (None: any optimizer of the file).
    ``ScalerStays`` keeps ``fused=True`` off exactly those optimizers."""
    finder = _ScalerFinder(rule)  # type: ignore[arg-type]  # only Rule's tree queries are used
    visit_original(child_index(rule), rule.context.module, finder)
    owners = _Owners(rule, finder.bindings)  # type: ignore[arg-type]
    return [(binding.call, _stepped(rule, binding)) for binding in finder.bindings if owners.reasons(binding, blockers)]


def _stepped(rule: Rule, binding: _Binding) -> list[cst.Call] | None:
    """The optimizers a kept scaler may step. Heuristic: ``scaler.step(opt)`` / ``scaler.unscale_(opt)``
    name them; a call the scaler is passed to (a trainer, a ``train_one_epoch`` helper) may step
    the optimizers passed beside it (arguments that hold one, or are named like one); a test
    (``if scaler is not None``) and its other methods step nothing. Anything else (a name the file
    does not show, a scaler stored, returned or passed with no optimizer beside it) may step any."""
    if binding.text is None:
        return None
    found: list[cst.Call] = []
    for node in binding.seen:
        parent = rule.parent(node)
        if isinstance(parent, cst.AssignTarget) and rule.parent(parent) is rule.parent(binding.call):
            continue  # the construction
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = rule.parent(parent)
            if not isinstance(call, cst.Call) or call.func is not parent:
                return None
            if parent.attr.value not in {"step", "unscale_"}:
                continue
            arg = keyword(call, "optimizer") or positional(call, 0)
            held = optimizers_held(rule, arg.value) if arg is not None else None
            if held is None:
                return None
            found.extend(held)
        elif _tested(rule, node):
            continue
        else:
            held = _passed_beside(rule, node)
            if held is None:
                return None
            found.extend(held)
    return found


def _tested(rule: Rule, node: cst.CSTNode) -> bool:
    parent = rule.parent(node)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation)):
        return True
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
        return True
    return isinstance(parent, (cst.If, cst.While, cst.IfExp)) and parent.test is node


def _compared(rule: Rule, node: cst.CSTNode) -> bool:
    """Whether ``node`` is compared other than by identity (``==``, ``in``: a partial is not the class)."""
    parent = rule.parent(node)
    comparison = rule.parent(parent) if isinstance(parent, cst.ComparisonTarget) else parent
    if not isinstance(comparison, cst.Comparison):
        return False
    return not all(isinstance(target.operator, (cst.Is, cst.IsNot)) for target in comparison.comparisons)


def _passed_beside(rule: Rule, node: cst.CSTNode) -> list[cst.Call] | None:
    """The optimizers passed in the same call as the scaler ``node``; None when it is not an
    argument, or no argument beside it holds (or is named like) an optimizer."""
    arg = rule.parent(node)
    call = rule.parent(arg) if isinstance(arg, cst.Arg) and arg.value is node else None
    if not isinstance(call, cst.Call):
        return None
    found: list[cst.Call] = []
    beside = False
    for other in call.args:
        if other is arg:
            continue
        held = optimizers_held(rule, other.value)
        if held is None and looks_like_optimizer(other.value):
            return None  # an optimizer the file does not show
        if held is not None:
            beside = True
            found.extend(held)
    return found if beside else None
