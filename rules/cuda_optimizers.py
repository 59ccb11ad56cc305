"""NRN511/NRN512: CUDA-only optimizers (apex, bitsandbytes) and legacy XLA syncfree ones → torch.optim."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import drop_keyword, keyword, make_arg, set_keyword_keep_layout
from porter.rules._lib.imports import import_binding
from porter.rules._lib.nodes import dotted
from porter.rules._lib.optim import adam_plan, foreach_adam, fused_adamw, literal_bool
from porter.rules._tables.optimizer import (
    APEX_FUSED_ADAM,
    APEX_FUSED_SGD,
    APEX_NO_EQUIVALENT,
    BITSANDBYTES,
    SYNCFREE,
    OptimizerPort,
)

_BNB = "bitsandbytes.optim."
_APEX = "apex.optimizers."
_SYNCFREE = "torch_xla.amp.syncfree."

Transform = Callable[[cst.Call], cst.Call]


class CudaOptimizers(Rule):
    """Port CUDA-only optimizers to the torch.optim ones TorchNeuron runs natively.

    What it does:
        bitsandbytes ``Adam8bit``/``AdamW8bit``/``PagedAdamW8bit`` (and the 32-bit, paged and plain
        ``bnb.optim.Adam``/``AdamW`` variants) → ``torch.optim.AdamW(..., fused=True)``; apex
        ``FusedAdam`` → ``torch.optim.AdamW(..., fused=True)`` (``adam_w_mode=True``, the default) or
        Adam semantics when ``adam_w_mode=False`` (no/zero weight decay → ``AdamW(weight_decay=0.0,
        fused=True)``, literal weight decay → ``Adam(..., foreach=True)``); apex ``FusedSGD`` →
        ``torch.optim.SGD``; ``torch_xla.amp.syncfree.AdamW/Adam/SGD`` → the ``torch.optim`` class
        (AdamW fused, Adam as NRN502 ports it). Every hyper-parameter is carried over: positional
        arguments become keywords by the source's parameter names, and source defaults that differ from
        torch's (``weight_decay=0`` of bnb ``Adam*`` and apex ``FusedAdam``) are written out. Imports
        left unused are removed. NRN512 marks memory changes (8-bit or paged state becomes fp32 device
        state), ``FusedLAMB`` and other optimizers with no torch equivalent, and calls with arguments
        that change the update and cannot be carried (``percentile_clipping``, ``bias_correction=False``,
        ``wd_after_momentum=True``, non-literal ``adam_w_mode``, ``**kwargs``), and bitsandbytes
        optimizers named without being built (a registry, ``inspect.getmembers(bnb.optim)``).

    Why:
        apex and bitsandbytes ship CUDA kernels only; ``torch_xla`` is the legacy Trn1 stack and is not
        used by TorchNeuron (torch-neuronx source, python_ops/torch_mlir/ops/optimizer.py; AWS Neuron docs, PyTorch/XLA programming guide (archive)). ``torch.optim.AdamW(fused=True)`` runs the native
        ``_fused_adamw_`` kernel on Neuron (torch-neuronx source, python_ops/torch_mlir/ops/optimizer.py). bitsandbytes' ``Adam*`` and ``AdamW*`` run the same
        kernel with decoupled weight decay (they differ only in the default weight decay; from the bnb
        source), so both map onto torch AdamW with the same weight decay.

    Before:
        opt = bnb.optim.AdamW8bit(model.parameters(), lr=2e-4, weight_decay=0.01)
        opt = apex.optimizers.FusedAdam(params, lr=1e-3, weight_decay=0.05)
        opt = syncfree.AdamW(model.parameters(), lr=1e-4)

    After:
        # porter: NRN512 8-bit optimizer state is now fp32 (~4x optimizer memory): check device memory
        opt = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.01, fused=True)
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.05, fused=True)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    Safety:
        Runs on every file (not only files being ported): these optimizers are CUDA-only (or legacy
        XLA) dependencies, so using one makes the file a port. Review: the optimizer implementation changes (8-bit quantized state → exact fp32 state changes
        the numerics slightly and the memory a lot). Hyper-parameters are never changed; a call whose
        arguments cannot be carried exactly is left as it is with an NRN512 marker. Matching is by
        qualified name (``import bitsandbytes as bnb``, ``from apex.optimizers import FusedAdam`` ...);
        optimizers reached through a factory or a string (``getattr(bnb.optim, name)``) are missed.
    """

    code: ClassVar[str] = "NRN511"
    name: ClassVar[str] = "cuda-optimizers"
    summary: ClassVar[str] = "apex FusedAdam, bitsandbytes 8-bit Adam(W), torch_xla syncfree -> torch.optim (AdamW fused)"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("import bitsandbytes", "from bitsandbytes", "import apex", "from apex", "syncfree")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN512": "CUDA-only optimizer kept or changed in memory use: review marker",
    }
    # Not a performance-only rule: apex, bitsandbytes and torch_xla optimizers do not run on Neuron,
    # so a file that uses one is being ported (like a file with a "cuda" device string).
    requires_port_context: ClassVar[bool] = False
    order: ClassVar[int] = 70

    def visit_Call(self, node: cst.Call) -> None:
        found = self._lookup(node)
        if found is None:
            return
        source, short = found
        if source == _BNB:
            self._bitsandbytes(node, short)
        elif source == _APEX:
            self._apex(node, short)
        else:
            self._syncfree(node, short)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # bnb.optim named but not built here (registered, introspected): still CUDA-only (corpus:
        # mmengine's optimizer registry, litgpt's get_argument_names(bnb.optim.PagedAdamW)).
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) or isinstance(parent, cst.Call) and parent.func is node:
            return
        if any(name == _BNB[:-1] or name.startswith(_BNB) for name in self.qualified(node)):
            self.mark(node, "bitsandbytes optimizers named here, not built: CUDA-only; on Trainium use torch.optim.AdamW(fused=True)", code="NRN512")

    def _lookup(self, call: cst.Call) -> tuple[str, str] | None:
        for name in self.qualified(call.func):
            for prefix in (_BNB, _APEX, _SYNCFREE):
                if name.startswith(prefix):
                    short = name.rsplit(".", 1)[-1]
                    if short[:1].isupper():
                        return prefix, short
        return None

    # ----------------------------------------------------------------- families
    def _bitsandbytes(self, call: cst.Call, short: str) -> None:
        port = BITSANDBYTES.get(short)
        if port is None:
            self.mark(call, f"bitsandbytes {short} is CUDA-only: port to a torch.optim optimizer by hand", code="NRN512")
            return
        self._port(call, f"bitsandbytes {short}", port, lambda c: fused_adamw(c, decay_default=False))

    def _apex(self, call: cst.Call, short: str) -> None:
        if short in APEX_NO_EQUIVALENT:
            self.mark(call, APEX_NO_EQUIVALENT[short], code="NRN512")
            return
        if short == "FusedSGD":
            self._port(call, "apex FusedSGD", APEX_FUSED_SGD, lambda c: c)
            return
        if short != "FusedAdam":
            self.mark(call, f"apex {short} is CUDA-only: port to a torch.optim optimizer by hand", code="NRN512")
            return
        named = _keywordized(call, APEX_FUSED_ADAM.positional)
        mode = keyword(named, "adam_w_mode") if named is not None else None
        adam_w = True if mode is None else literal_bool(mode.value)
        if adam_w is None:
            self.mark(call, "apex FusedAdam adam_w_mode is not a literal: True -> AdamW, False -> Adam (L2)", code="NRN512")
            return
        if adam_w:
            self._port(call, "apex FusedAdam", APEX_FUSED_ADAM, lambda c: fused_adamw(c, decay_default=False))
            return
        # adam_w_mode=False: Adam's L2 weight decay.
        plan = adam_plan(named) if named is not None else "adam-review"
        if plan == "adam-review":
            self.mark(call, "apex FusedAdam(adam_w_mode=False) weight decay not a literal: port to torch.optim.Adam by hand", code="NRN512")
            return
        if plan == "adamw":
            self._port(call, "apex FusedAdam(adam_w_mode=False)", APEX_FUSED_ADAM, lambda c: fused_adamw(c, decay_default=False))
        else:
            as_adam = OptimizerPort(
                target="Adam",
                positional=APEX_FUSED_ADAM.positional,
                dropped=APEX_FUSED_ADAM.dropped,
                blocking=APEX_FUSED_ADAM.blocking,
            )
            self._port(call, "apex FusedAdam(adam_w_mode=False)", as_adam, foreach_adam)

    def _syncfree(self, call: cst.Call, short: str) -> None:
        port = SYNCFREE.get(short)
        if port is None:
            self.mark(call, f"torch_xla syncfree {short} is legacy XLA: port to torch.optim by hand", code="NRN512")
            return
        if short == "AdamW":
            self._port(call, "torch_xla syncfree AdamW", port, lambda c: fused_adamw(c, decay_default=False))
            return
        if short == "SGD":
            self._port(call, "torch_xla syncfree SGD", port, lambda c: c)
            return
        named = _keywordized(call, port.positional)
        plan = adam_plan(named) if named is not None else "adam-review"
        if plan == "adamw":
            adamw = OptimizerPort(target="AdamW", positional=port.positional, defaults={"weight_decay": "0.0"})
            self._port(call, "torch_xla syncfree Adam (no weight decay)", adamw, lambda c: fused_adamw(c, decay_default=False))
        elif plan == "adam-foreach":
            self._port(call, "torch_xla syncfree Adam", port, foreach_adam)
        else:
            self._port(call, "torch_xla syncfree Adam", port, lambda c: c)
            self.mark(call, "Adam weight decay not a literal: if it is 0, AdamW(weight_decay=0.0, fused=True) is identical", code="NRN512")

    # ----------------------------------------------------------------- the rewrite
    def _port(self, call: cst.Call, label: str, port: OptimizerPort, finish: Transform) -> None:
        named = _keywordized(call, port.positional)
        if named is None:
            self.mark(call, f"{label}: arguments not carried automatically (*args/**kwargs or too many); port by hand", code="NRN512")
            return
        for name, allowed in port.blocking.items():
            arg = keyword(named, name)
            if arg is not None and self.context.module.code_for_node(arg.value) != allowed:
                self.mark(call, f"{label}: {name} has no torch.optim equivalent unless {allowed}; port by hand", code="NRN512")
                return
        target = f"torch.optim.{port.target}"

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            new = _keywordized(updated, port.positional) or updated
            for name in (*port.dropped, *port.blocking):
                new = drop_keyword(new, name)
            for name, value in port.defaults.items():
                if keyword(new, name) is None:
                    new = set_keyword_keep_layout(new, name, cst.parse_expression(value))
            return finish(new.with_changes(func=cst.parse_expression(target)))

        suffix = " (fused)" if port.target == "AdamW" else ""
        self.replace(call, transform, f"{label} -> {target}{suffix}, hyper-parameters carried over", imports=(ImportSpec("torch"),))
        self._drop_source_import(call.func)
        if port.note:
            self.mark(call, port.note, code="NRN512")

    def _drop_source_import(self, func: cst.BaseExpression) -> None:
        root = (dotted(func) or "").split(".")[0]
        binding = import_binding(self.context.module, root) if root else None
        if binding is not None:
            self.drop_import_if_unused(ImportSpec(*binding))


def _keywordized(call: cst.Call, names: tuple[str, ...]) -> cst.Call | None:
    """``call`` with positional arguments after ``params`` written as keywords; None if impossible."""
    if any(arg.star for arg in call.args):
        return None
    args: list[cst.Arg] = []
    index = 0
    for arg in call.args:
        if arg.keyword is None:
            if index > len(names):
                return None
            args.append(arg if index == 0 else make_arg(names[index - 1], arg.value).with_changes(comma=arg.comma))
            index += 1
        else:
            args.append(arg)
    return call.with_changes(args=args)
