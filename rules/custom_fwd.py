"""NRN110: ``torch.cuda.amp.custom_fwd/custom_bwd`` become ``torch.amp.custom_fwd(device_type=...)``."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import make_arg, with_args
from porter.rules._lib.device import retorch, torch_ref
from porter.rules._lib.nodes import dotted

_NAMES = {f"torch.cuda.amp.{name}": name for name in ("custom_fwd", "custom_bwd")}
_NAMES.update({f"torch.cuda.amp.autocast_mode.{name}": name for name in ("custom_fwd", "custom_bwd")})
# --style accelerator: decorators run at import time, so fall back to "cpu" when no accelerator is present.
_ACCELERATOR_TYPE = 'getattr(torch.accelerator.current_accelerator(), "type", "cpu")'


class CustomFwd(Rule):
    """Port the CUDA-only custom autograd-function decorators.

    What it does:
        ``@torch.cuda.amp.custom_fwd`` → ``@torch.amp.custom_fwd(device_type="neuron")``;
        ``@custom_fwd(cast_inputs=torch.float32)`` (from ``torch.cuda.amp``) →
        ``@torch.amp.custom_fwd(device_type="neuron", cast_inputs=torch.float32)``; the same for
        ``custom_bwd``. The file's spelling is kept where it spells ``.cuda.amp.``
        (``th.cuda.amp.custom_fwd`` → ``th.amp.custom_fwd``); imported names become
        ``torch.amp.*`` and the old import is dropped once unused. With ``--style accelerator``
        the device type is ``getattr(torch.accelerator.current_accelerator(), "type", "cpu")``.

    Why:
        The ``torch.cuda.amp`` decorators are deprecated and tie the function to the CUDA autocast
        state; ``torch.amp.custom_fwd`` takes the device type explicitly (``device_type`` is a
        required keyword in torch 2.13). On Neuron the autocast device type is ``neuron``
        (torch-neuronx source, csrc/amp/autocast_mode.cpp; PyTorch AMP docs), so ``cast_inputs`` and the autocast state follow ``torch.autocast("neuron")``.

    Before:
        class ScaledMatmul(torch.autograd.Function):
            @staticmethod
            @torch.cuda.amp.custom_fwd(cast_inputs=torch.float16)
            def forward(ctx, a, b): ...

            @staticmethod
            @torch.cuda.amp.custom_bwd
            def backward(ctx, grad): ...

    After:
        class ScaledMatmul(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="neuron", cast_inputs=torch.float16)
            def forward(ctx, a, b): ...

            @staticmethod
            @torch.amp.custom_bwd(device_type="neuron")
            def backward(ctx, grad): ...

    Safety:
        Safe: same behaviour with the device type made explicit. ``cast_inputs=torch.float16`` is
        kept as written (the mixed-precision rules decide about fp16 → bf16). Only decorator uses
        are ported; calling ``custom_fwd(fn)`` directly is left alone (known miss, rare).
    """

    code: ClassVar[str] = "NRN110"
    name: ClassVar[str] = "custom-fwd"
    summary: ClassVar[str] = 'torch.cuda.amp.custom_fwd/custom_bwd -> torch.amp.custom_fwd(device_type="neuron")'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("custom_fwd", "custom_bwd")
    order: ClassVar[int] = 20

    def visit_Decorator(self, node: cst.Decorator) -> None:
        decorator = node.decorator
        func = decorator.func if isinstance(decorator, cst.Call) else decorator
        which = next((_NAMES[name] for name in self.qualified(func) if name in _NAMES), None)
        if which is None:
            return
        new_func = self._new_name(func, which, torch_ref(self.context.module)[0])
        torch_name, torch_imports = torch_ref(self.context.module)
        accelerator = self.options.style == "accelerator"
        device = cst.parse_expression(retorch(_ACCELERATOR_TYPE, torch_name) if accelerator else '"neuron"')
        device_arg = make_arg("device_type", device)
        is_call = isinstance(decorator, cst.Call)

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Decorator)
            if is_call:
                call = updated.decorator
                assert isinstance(call, cst.Call)
                new_call = with_args(call.with_changes(func=new_func), [device_arg, *call.args])
            else:
                new_call = cst.Call(func=new_func, args=[device_arg])
            return updated.with_changes(decorator=new_call)

        uses_torch = (dotted(new_func) or "").startswith(f"{torch_name}.amp.") and not self._spells_cuda_amp(func)
        imports = torch_imports if uses_torch or accelerator else ()
        self.replace(node, transform, f"torch.cuda.amp.{which} -> torch.amp.{which}(device_type=...)", imports=imports)

    @staticmethod
    def _spells_cuda_amp(func: cst.BaseExpression) -> bool:
        parts = (dotted(func) or "").split(".")
        return len(parts) >= 4 and parts[-3:-1] == ["cuda", "amp"]

    def _new_name(self, func: cst.BaseExpression, which: str, torch_name: str) -> cst.BaseExpression:
        parts = (dotted(func) or "").split(".")
        if len(parts) >= 4 and parts[-3:-1] == ["cuda", "amp"]:
            return cst.parse_expression(".".join([*parts[:-3], "amp", which]))
        if len(parts) == 1:
            self.drop_import_if_unused(ImportSpec("torch.cuda.amp", which))
        elif parts[0] == "amp":
            self.drop_import_if_unused(ImportSpec("torch.cuda", "amp"))
        return cst.parse_expression(f"{torch_name}.amp.{which}")
