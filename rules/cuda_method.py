"""NRN102: ``.cuda(...)`` method calls become ``.to("neuron"...)``."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.changes import Safety
from porter.rule import Rule
from porter.rules._device import device_named
from porter.rules._helpers import keyword, make_arg, positional, with_args


def _device_for(index: cst.BaseExpression | None, module: cst.Module) -> cst.BaseExpression:
    """The ``neuron`` device expression for ``.cuda(index)``."""
    if index is None:
        return cst.SimpleString('"neuron"')
    if isinstance(index, cst.Integer):
        return cst.SimpleString(f'"neuron:{index.value}"')
    if device_named(index):  # .cuda(device): the variable is ported where it is assigned
        return index
    text = module.code_for_node(index)
    quote = "'" if '"' in text else '"'
    return cst.parse_expression(f"f{quote}neuron:{{{text}}}{quote}")


class CudaMethod(Rule):
    """Port ``.cuda()`` on tensors and modules to ``.to("neuron")``.

    What it does:
        ``x.cuda()`` → ``x.to("neuron")``; ``x.cuda(non_blocking=True)`` →
        ``x.to("neuron", non_blocking=True)``; ``x.cuda(0)`` → ``x.to("neuron:0")``;
        ``x.cuda(local_rank)`` / ``x.cuda(device=gpu)`` → ``x.to(f"neuron:{local_rank}")``;
        ``x.cuda(device)`` with a device-named variable → ``x.to(device)``.

    Why:
        TorchNeuron registers ``neuron`` as the device type; ``.to("neuron")`` is the spelling the
        AWS guide uses, and works for tensors and modules alike. ``.cuda()`` raises on a machine
        without CUDA. In a distributed job the Neuron device index equals the local rank, so an
        integer index carries over.

    Before:
        model.cuda()
        images = images.cuda(non_blocking=True)
        batch = {k: v.cuda() for k, v in batch.items()}

    After:
        model.to("neuron")
        images = images.to("neuron", non_blocking=True)
        batch = {k: v.to("neuron") for k, v in batch.items()}

    Safety:
        Safe. Receiver heuristic: any ``.cuda(...)`` method call is taken to be
        ``Tensor.cuda``/``Module.cuda`` (the method has no qualified name). A user class with its
        own unrelated ``cuda()`` method would be rewritten too (known miss; rare in training code).
    """

    code: ClassVar[str] = "NRN102"
    name: ClassVar[str] = "cuda-method"
    summary: ClassVar[str] = '.cuda(...) on tensors and modules -> .to("neuron"...)'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = (".cuda(",)
    order: ClassVar[int] = 10

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "cuda":
            return
        if any(arg.star for arg in node.args):
            return
        index_arg = positional(node, 0) or keyword(node, "device")
        extra = [arg for arg in node.args if arg is not index_arg]
        if any(arg.keyword is None or arg.keyword.value not in {"non_blocking", "memory_format"} for arg in extra):
            return  # unknown signature: leave it
        device = _device_for(index_arg.value if index_arg else None, self.context.module)

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call) and isinstance(updated.func, cst.Attribute)
            kept = [arg for arg in updated.args if arg.keyword is not None and arg.keyword.value != "device"]
            call = updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to")))
            return with_args(call, [make_arg(None, device), *kept])

        self.replace(node, transform, '.cuda() -> .to("neuron")')
