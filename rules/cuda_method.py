"""NRN102: ``.cuda(...)`` method calls become ``.to("neuron"...)``."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import keyword, make_arg, positional, with_args
from porter.rules._lib.branches import checked_not_none
from porter.rules._lib.device import device_named, map_location_cuda_call, retorch, torch_ref
from porter.rules._lib.integers import IntegerNames, NoneNames


def _device_for(index: cst.BaseExpression | None, integer_index: bool, may_be_none: bool = False) -> cst.BaseExpression:
    """The ``neuron`` device expression for ``.cuda(index)`` (``.cuda(None)``: the current device)."""
    if index is None or (isinstance(index, cst.Name) and index.value == "None"):
        return cst.SimpleString('"neuron"')
    if may_be_none:  # .cuda(args.gpu) with --gpu unset means the current device, not "neuron:None"
        text = cst.Module([]).code_for_node(index)
        quote = "'" if '"' in text else '"'
        return cst.parse_expression(f'"neuron" if {text} is None else f{quote}neuron:{{{text}}}{quote}')
    if isinstance(index, cst.Integer):
        return cst.SimpleString(f'"neuron:{index.value}"')
    if device_named(index) and not integer_index:  # .cuda(device): ported where it is assigned
        return index
    text = cst.Module([]).code_for_node(index)
    quote = "'" if '"' in text else '"'
    return cst.parse_expression(f"f{quote}neuron:{{{text}}}{quote}")


def _accelerator_device_for(index: cst.BaseExpression | None, torch_name: str) -> cst.BaseExpression:
    """``--style accelerator``: ``.cuda()`` -> the current accelerator; an index stays an index
    (an integer device means "this index of the current accelerator" in torch 2.13)."""
    if index is None:
        return cst.parse_expression(retorch("torch.accelerator.current_accelerator()", torch_name))
    return index


class CudaMethod(Rule):
    """Port ``.cuda()`` on tensors and modules to ``.to("neuron")``.

    What it does:
        ``x.cuda()`` → ``x.to("neuron")``; ``x.cuda(non_blocking=True)`` →
        ``x.to("neuron", non_blocking=True)``; ``x.cuda(0)`` → ``x.to("neuron:0")``;
        ``x.cuda(local_rank)`` / ``x.cuda(device=gpu)`` → ``x.to(f"neuron:{local_rank}")``;
        ``x.cuda(device)`` with a device-named variable → ``x.to(device)``, unless NRN105's
        heuristic takes the name for an integer index (``device_id = rank_to_gpu[rank]``):
        ``x.to(f"neuron:{device_id}")``, as NRN105 writes ``x.to(device_id)`` (the two rules
        must agree, or a second port would change the first one's output).
        With ``--style accelerator``: ``x.cuda()`` → ``x.to(torch.accelerator.current_accelerator())``
        and ``x.cuda(i)`` → ``x.to(i)`` (an integer device is an index of the current accelerator).
        ``storage.cuda(...)`` in a ``map_location`` lambda is left to NRN101, which replaces the
        whole lambda. ``x.cuda(None)`` means the current device: ``x.to("neuron")``; an index
        that may be None (``args.gpu`` of an argparse option with no default or ``default=None``,
        a parameter defaulting to None) becomes ``x.to("neuron" if args.gpu is None else
        f"neuron:{args.gpu}")`` — ``"neuron:None"`` would raise — unless an enclosing ``if
        args.gpu is not None:`` / ``if args.gpu:`` already rules None out.

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
        Index heuristic: NRN105's (``rules/_lib/integers.py``). None heuristic: argparse dests
        are matched as the last part of any attribute (``opt.gpu`` for ``--gpu``); a parameter
        default of None only inside its own function; a reassignment (``gpu = gpu or 0``) before
        the call is not followed (the conditional form is still correct there).
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
        if any(arg.star for arg in node.args) or self._in_map_location_lambda(node):
            return
        index_arg = positional(node, 0) or keyword(node, "device")
        extra = [arg for arg in node.args if arg is not index_arg]
        if any(arg.keyword is None or arg.keyword.value not in {"non_blocking", "memory_format"} for arg in extra):
            return  # unknown signature: leave it
        index = index_arg.value if index_arg else None
        integer_index = index is not None and self.analysis(IntegerNames).holds_index(index)
        may_be_none = (
            index is not None
            and self.analysis(NoneNames).may_be_none(self, index)
            and not checked_not_none(self, node, index)
        )
        accelerator = self.options.style == "accelerator"
        torch_name, torch_imports = torch_ref(self.context.module)

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call) and isinstance(updated.func, cst.Attribute)
            # The device is built from the updated argument: edits of other rules inside it
            # (``torch.cuda.current_device()``) are kept, and a second port changes nothing.
            updated_arg = positional(updated, 0) or keyword(updated, "device")
            new_index = updated_arg.value if updated_arg else None
            if accelerator:
                device = _accelerator_device_for(new_index, torch_name)
            else:
                device = _device_for(new_index, integer_index, may_be_none)
            kept = [arg for arg in updated.args if arg.keyword is not None and arg.keyword.value != "device"]
            call = updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to")))
            return with_args(call, [make_arg(None, device), *kept])

        if accelerator:
            imports = torch_imports if index is None else ()
            self.replace(node, transform, ".cuda() -> .to(<current accelerator>)", imports=imports)
            return
        self.replace(node, transform, '.cuda() -> .to("neuron")')

    def _in_map_location_lambda(self, node: cst.Call) -> bool:
        lam = self.parent(node)
        return isinstance(lam, cst.Lambda) and map_location_cuda_call(lam) is node and self._is_map_location(lam)

    def _is_map_location(self, lam: cst.Lambda) -> bool:
        arg = self.parent(lam)
        return isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value == "map_location"
