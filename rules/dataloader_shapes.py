"""NRN701-NRN703: DataLoaders that keep the batch shape static and the device fed."""

from __future__ import annotations

import re
from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import add_keyword_keep_layout, keyword
from porter.rules._lib.nodes import dotted
from porter.rules._lib.tree import child_index

_DATALOADER = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
_EVAL_TOKEN = re.compile(r"^(val|valid|validation|eval|evaluation|test|testing|dev|holdout)")
_GENERATION_TOKEN = re.compile(
    r"^(gen|generate|generation|sample|sampling|predict|prediction|pred|infer|inference)(loader|dataloader|dl|set|ds|data)?$"
)
# Calls in a loop body that say the loop does not train: generation, sampling, prediction.
_NOT_TRAINING_CALLS = frozenset({"generate", "sample", "predict", "evaluate", "inference"})
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.grad_mode.no_grad"})
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory, drop_last)
_POSITIONS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn", "pin_memory", "drop_last")


def _in_order(call: cst.Call) -> bool:
    """``shuffle=False`` written out, with no sampler: the loader visits every example once, in order
    (trl's reference log-prob precompute, indexed by example afterwards): dropping its last batch
    would lose examples, not just a shape."""
    shuffle = keyword(call, "shuffle")  # a third positional argument: the call is left alone above
    return (shuffle is not None and isinstance(shuffle.value, cst.Name) and shuffle.value.value == "False"
            and keyword(call, "sampler") is None)


def _eval_named(text: str | None) -> bool:
    """A name that says evaluation: ``val_loader``, ``data_loader_val``, ``eval_dataloader``, ``testloader``."""
    if not text:
        return False
    tokens = re.split(r"[_.\W]+", text.lower())
    return any(_EVAL_TOKEN.match(token) for token in tokens if token)


class DataLoaderShapes(Rule):
    """Give training DataLoaders a static batch shape (``drop_last=True``) and flag the rest.

    What it does:
        A training ``torch.utils.data.DataLoader(...)`` with no ``drop_last`` gets
        ``drop_last=True`` (NRN701). An evaluation loader (assigned to, or built from, a name
        like ``val_loader``/``eval_dataloader``/``dataset_test``, or built in a function named like
        eval/validate/test), and a loader that feeds generation, sampling or prediction (named so,
        or iterated by a loop that calls ``.generate()``/``.sample()``/``.predict()`` or runs under
        ``torch.no_grad()``/``inference_mode()``), gets an NRN702 review marker instead; so does a
        loader with ``shuffle=False`` written out and no sampler (a pass over every example in order:
        an evaluation or a precompute indexed by example afterwards). A training loader with no
        ``num_workers`` gets an NRN703 review suggestion (workers, ``persistent_workers=True``,
        ``prefetch_factor``).

    Why:
        TorchNeuron compiles one graph per input shape (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile): a new shape is a recompile).
        The short last batch of an epoch is such a shape: with ``drop_last=True`` every training
        batch has the same size. Dropping batches from evaluation would change the metric, so a
        person decides there (pad the last batch, or accept one extra compile). A single-process
        loader leaves a fast device waiting for data.

    Before:
        train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
        val_loader = DataLoader(val_set, batch_size=64)

    After:
        # porter: NRN703 single-process loading can starve the device: set num_workers (...)
        train_loader = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True)
        # porter: NRN702 evaluation loader: a short last batch is a new shape (...)
        val_loader = DataLoader(val_set, batch_size=64)

    Safety:
        Review: ``drop_last=True`` drops up to ``batch_size - 1`` samples per epoch, and a dataset
        smaller than one batch yields no batch at all (a training loop that then never steps).
        Loaders with an explicit ``drop_last``, a ``batch_sampler``, ``batch_size=None``,
        ``**kwargs`` or more than two positional arguments are left alone. Training versus
        evaluation is decided by names only; an evaluation loader with a neutral name
        (``loader2``) is treated as a training loader (known miss).
    """

    code: ClassVar[str] = "NRN701"
    name: ClassVar[str] = "dataloader-shapes"
    summary: ClassVar[str] = "training DataLoader -> drop_last=True (static batch shape); eval loaders and num_workers flagged"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("DataLoader",)
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN702": "evaluation DataLoader without drop_last: the short last batch is a new shape (review marker)",
        "NRN703": "training DataLoader without num_workers: single-process loading can starve the device (review marker)",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 70

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, *_DATALOADER):
            return
        if any(arg.star for arg in node.args):
            return  # **kwargs may carry drop_last
        positional = [arg for arg in node.args if arg.keyword is None]
        if len(positional) > 2:
            return
        if keyword(node, "drop_last") is not None or keyword(node, "batch_sampler") is not None:
            return
        batch_size = keyword(node, "batch_size")
        if batch_size is not None and isinstance(batch_size.value, cst.Name) and batch_size.value.value == "None":
            return
        evaluation = self._is_evaluation(node)
        in_order = not evaluation and _in_order(node)
        if evaluation or in_order or self._feeds_no_training(node):
            what = ("evaluation loader" if evaluation else
                    "loader read in order (shuffle=False, no sampler: an evaluation or precompute pass over every example)"
                    if in_order else "loader feeding generation/sampling (no training step)")
            self.mark(node, f"{what}: a short last batch is a new shape (one more compile); pad it or accept it", code="NRN702")
            return

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            return add_keyword_keep_layout(updated, "drop_last", cst.Name("True"))

        self.replace(
            node,
            transform,
            "drop_last=True: one static batch shape (drops the short last batch; a dataset smaller than a batch yields none)",
        )
        if keyword(node, "num_workers") is None:
            self.mark(
                node,
                "single-process loading can starve the device: set num_workers, persistent_workers=True, prefetch_factor",
                code="NRN703",
            )

    def _feeds_no_training(self, call: cst.Call) -> bool:
        """Whether the loader bound here is iterated by a loop that generates, samples or predicts
        (``model.generate(...)`` in its body, or the loop runs under ``torch.no_grad()``)."""
        parent = self.parent(call)
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return False
        name = dotted(parent.targets[0].target)
        if name is None:
            return False
        if any(_GENERATION_TOKEN.match(token) for token in re.split(r"[_.\W]+", name.lower()) if token):
            return True
        index = child_index(self)  # the file's index: no matcher walk of the whole module per loader
        for loop in index.find(index.root, cst.For):
            assert isinstance(loop, cst.For)
            if name not in {dotted(n) for n in index.find(loop.iter, cst.Name, cst.Attribute)}:
                continue
            for inner in index.find(loop.body, cst.Call):
                assert isinstance(inner, cst.Call)
                if isinstance(inner.func, cst.Attribute) and inner.func.attr.value in _NOT_TRAINING_CALLS:
                    return True
            if any(self._no_grad(a) for a in self.ancestors(loop)):
                return True
        return False

    def _no_grad(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.With):
            return any(self.qualified(item.item.func if isinstance(item.item, cst.Call) else item.item) & _NO_GRAD for item in node.items)
        if isinstance(node, cst.FunctionDef):
            return any(
                self.qualified(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) & _NO_GRAD
                for d in node.decorators
            )
        return False

    def _is_evaluation(self, call: cst.Call) -> bool:
        parent = self.parent(call)
        if isinstance(parent, cst.Assign):
            if any(_eval_named(dotted(target.target)) for target in parent.targets):
                return True
            if any(dotted(target.target) for target in parent.targets):
                return False  # a plainly named target (train_loader) decides
        if isinstance(parent, cst.AnnAssign) and _eval_named(dotted(parent.target)):
            return True
        if isinstance(parent, cst.Arg) and parent.keyword is not None and _eval_named(parent.keyword.value):
            return True  # Trainer-style eval_dataloader=DataLoader(...)
        dataset = call.args[0].value if call.args and call.args[0].keyword is None else None
        dataset_arg = keyword(call, "dataset")
        if dataset is None and dataset_arg is not None:
            dataset = dataset_arg.value
        if dataset is not None and _eval_named(dotted(dataset)):
            return True
        for ancestor in self.ancestors(call):
            if isinstance(ancestor, cst.FunctionDef):
                return _eval_named(ancestor.name.value)
        return False
