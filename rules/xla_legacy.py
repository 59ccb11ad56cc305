"""NRN310–NRN315, NRN319: legacy PyTorch/XLA torch-neuronx code → native TorchNeuron."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import keyword, positional
from porter.rules._lib.device import ACCELERATOR_TYPE, DEVICE_KEYWORDS, device_named, retorch, torch_ref
from porter.rules._lib.nodes import dotted, string_value, with_string_value
from porter.rules._lib.statements import remove_small, single_small
from porter.rules._lib.tree import holder_through_choices
from porter.rules._tables.xla import DEVICE_CALLS, DIST_CALLS, LOADERS, NOTES, OPTIMIZER_STEP, STEP_CALLS

_XLA_DEVICE_FIRST_ARG = ("torch.device", "torch.autocast", "torch.amp.autocast")
_OWNED_ELSEWHERE = ("torch_xla.amp.syncfree",)  # optimizers: NRN511


class XlaLegacy(Rule):
    """Port Trn1-era PyTorch/XLA training code to the native ``neuron`` device.

    What it does:
        ``xm.xla_device()`` / ``torch_xla.device()`` → ``torch.device("neuron")`` (NRN310);
        ``xm.mark_step()`` / ``torch_xla.sync()`` statements removed (NRN311);
        ``xm.optimizer_step(opt)`` → ``opt.step()`` (NRN312, review; a marker asks for DDP when the
        file has none); ``pl.MpDeviceLoader(loader, device)`` → ``loader`` with a marker to move
        batches with ``.to(device)`` (NRN313, review); the ``"xla"`` device string in
        ``torch.device("xla")``, ``torch.autocast("xla")``, ``device_type="xla"`` and
        device-named variables → ``"neuron"`` (NRN314); ``xm.xrt_world_size()`` /
        ``xm.get_ordinal()`` → ``torch.distributed.get_world_size()`` / ``get_rank()`` (NRN315,
        review). Any other ``torch_xla`` API keeps its code and gets an NRN319 marker with a note
        (``xmp.spawn`` → torchrun, ``xm.save``, ``xm.master_print``, ...). ``torch_xla`` imports
        left unused are dropped. ``init_process_group("xla")`` is NRN301; ``XLA_USE_BF16`` is
        NRN316. With ``--style accelerator`` the device is ``torch.accelerator.current_accelerator()``.

    Why:
        The XLA-based torch-neuronx ended with PyTorch 2.9 and TorchNeuron (2.10+) is the native
        backend: ``import torch_xla`` fails there and the install guide's fix is
        ``torch.device('neuron')`` instead of ``xm.xla_device()`` (AWS Neuron docs, TorchNeuron troubleshooting (torch/troubleshooting); AWS Neuron docs, PyTorch/XLA programming guide (archive)). The native
        backend runs eagerly (or compiled by ``torch.compile``), so lazy-tensor step boundaries go;
        gradient all-reduce comes from DDP instead of ``xm.optimizer_step`` (AWS Neuron docs, TorchNeuron overview (torch/index) item 10; the
        combination of rewrites is an inference).

    Before:
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.parallel_loader as pl
        device = xm.xla_device()
        loader = pl.MpDeviceLoader(loader, device)
        with torch.autocast(device_type="xla", dtype=torch.bfloat16):
            loss = model(x)
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()

    After:
        device = torch.device("neuron")
        # porter: NRN313 batches are no longer moved by MpDeviceLoader; add .to(device) where they are used
        loader = loader
        with torch.autocast(device_type="neuron", dtype=torch.bfloat16):
            loss = model(x)
        loss.backward()
        # porter: NRN312 xm.optimizer_step all-reduced gradients; wrap the model in DistributedDataParallel
        opt.step()

    Safety:
        Device, ``mark_step`` and ``"xla"`` strings are safe. ``optimizer_step`` and
        ``MpDeviceLoader`` are review changes: the all-reduce and the host-to-device copy they did
        must come from DDP and ``.to(device)``. The rank queries raise before
        ``init_process_group`` where the XLA ones returned 0/1: review. Receivers are resolved by
        qualified name (``import torch_xla.core.xla_model as xm`` and from-imports work).
    """

    code: ClassVar[str] = "NRN310"
    name: ClassVar[str] = "xla-legacy"
    summary: ClassVar[str] = 'legacy torch_xla code (xm.xla_device, mark_step, MpDeviceLoader, "xla") -> native neuron'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("torch_xla", '"xla"', "'xla'")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN311": "xm.mark_step() / torch_xla.sync() removed",
        "NRN312": "xm.optimizer_step(opt) -> opt.step() (review: gradient all-reduce from DDP)",
        "NRN313": "pl.MpDeviceLoader(loader, device) -> loader (review: move batches with .to(device))",
        "NRN314": 'device string "xla" -> "neuron"',
        "NRN315": "xm.xrt_world_size()/get_ordinal() -> torch.distributed.get_world_size()/get_rank() (review)",
        "NRN319": "torch_xla API with no mechanical port: review marker",
    }
    safe_extra_codes: ClassVar[frozenset[str]] = frozenset({"NRN311", "NRN314"})
    order: ClassVar[int] = 20

    def visit_Module(self, node: cst.Module) -> None:
        self._handled: set[int] = set()
        self._has_ddp = "DistributedDataParallel" in self.context.text

    @property
    def _accelerator(self) -> bool:
        return self.options.style == "accelerator"

    # ------------------------------------------------------------------ imports
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            module = dotted(alias.name) or ""
            if module == "torch_xla" or module.startswith("torch_xla."):
                asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
                self.drop_import_if_unused(ImportSpec(module, None, asname))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted(node.module) if node.module else None
        if not module or not (module == "torch_xla" or module.startswith("torch_xla.")) or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
            self.drop_import_if_unused(ImportSpec(module, dotted(alias.name), asname))

    # ------------------------------------------------------------------ calls
    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified(node.func)
        if not any(name.startswith("torch_xla") for name in names) or _elsewhere(names):
            return
        self._handled.add(id(node.func))
        if names & DEVICE_CALLS:
            self._device_call(node)
        elif names & STEP_CALLS:
            self._step_call(node)
        elif names & OPTIMIZER_STEP:
            self._optimizer_step(node)
        elif names & LOADERS:
            self._loader(node, names)
        elif names & DIST_CALLS.keys():
            new = DIST_CALLS[next(iter(names & DIST_CALLS.keys()))]
            name, imports = torch_ref(self.context.module)
            self.replace(
                node,
                cst.parse_expression(retorch(new, name)),
                f"{dotted(node.func)}() -> {new} (raises before init_process_group)",
                code="NRN315",
                safety=Safety.REVIEW,
                imports=imports,
            )
        else:
            self._note(node, names)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._reference(node)

    def _reference(self, node: cst.Attribute | cst.Name) -> None:
        """A torch_xla name used other than as a handled call (passed along, subclassed, ...)."""
        parent = self.parent(node)
        if id(node) in self._handled or (isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node)):
            return
        names = {name for name in self.qualified(node) if name.startswith("torch_xla")}
        # The ancestor walk only for torch_xla names (it was the rule's main cost on big files).
        if not names or any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in self.ancestors(node)):
            return
        if not _elsewhere(names):
            self._note(node, names)

    def _note(self, node: cst.CSTNode, names: set[str]) -> None:
        name = min(names)
        note = next((text for key, text in NOTES.items() if name == key or name.startswith(key + ".")), None)
        short = dotted(node.func if isinstance(node, cst.Call) else node) or name
        self.mark(node, f"{short}: {note}" if note else f"{short} is PyTorch/XLA-only; port by hand (facts: native neuron has no torch_xla)", code="NRN319")

    def _device_call(self, node: cst.Call) -> None:
        index = positional(node, 0)
        if self._accelerator:
            text = "torch.accelerator.current_accelerator()"
        elif index is None:
            text = 'torch.device("neuron")'
        else:
            text = f'torch.device("neuron", {self.context.module.code_for_node(index.value)})'
        name, imports = torch_ref(self.context.module)
        self.replace(node, cst.parse_expression(retorch(text, name)), f"{dotted(node.func)}() -> {text}", imports=imports)

    def _step_call(self, node: cst.Call) -> None:
        expr = self.parent(node)
        if not isinstance(expr, cst.Expr):
            self.mark(node, "xla step boundary used as a value; remove it (native runs eagerly)", code="NRN311")
            return
        message = f"{dotted(node.func)}() removed: no lazy-tensor step boundary on native Neuron"
        remove_small(self, expr, self._removable, message, code="NRN311")

    def _removable(self, statement: cst.BaseStatement) -> bool:
        small = single_small(statement)
        return (
            isinstance(small, cst.Expr)
            and isinstance(small.value, cst.Call)
            and bool(self.qualified(small.value.func) & STEP_CALLS)
        )

    def _optimizer_step(self, node: cst.Call) -> None:
        optimizer = positional(node, 0) or keyword(node, "optimizer")
        extra = [arg for arg in node.args if arg is not optimizer and not (arg.keyword and arg.keyword.value == "barrier")]
        if optimizer is None or extra:
            self.mark(node, "xm.optimizer_step with optimizer_args: call optimizer.step(**args) under DDP", code="NRN319")
            return
        receiver = optimizer.value

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            arg = positional(updated, 0) or keyword(updated, "optimizer")
            value = arg.value if arg is not None else receiver
            return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("step")))

        self.replace(
            node,
            transform,
            "xm.optimizer_step(opt) -> opt.step() (gradient all-reduce must come from DDP)",
            code="NRN312",
            safety=Safety.REVIEW,
        )
        if not self._has_ddp:
            self.mark(node, "xm.optimizer_step all-reduced gradients; wrap the model in DistributedDataParallel", code="NRN312")

    def _loader(self, node: cst.Call, names: set[str]) -> None:
        loader = positional(node, 0) or keyword(node, "loader")
        if loader is None or not any(name.endswith("MpDeviceLoader") for name in names):
            self.mark(node, "pl.ParallelLoader: iterate the plain DataLoader and move batches with .to(device)", code="NRN319")
            return
        self.replace(
            node,
            lambda n: (positional(n, 0) or keyword(n, "loader")).value,  # type: ignore[union-attr,arg-type]
            "pl.MpDeviceLoader(loader, device) -> loader (batches must be moved with .to(device))",
            code="NRN313",
            safety=Safety.REVIEW,
            drops_calls=True,
        )
        self.mark(node, "batches are no longer moved by MpDeviceLoader; add .to(device) where they are used", code="NRN313")

    # ------------------------------------------------------------------ "xla" device strings
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if string_value(node) != "xla" or not self._xla_device_position(node):
            return
        if self._accelerator:
            name, imports = torch_ref(self.context.module)
            new = cst.parse_expression(retorch(ACCELERATOR_TYPE, name))
            self.replace(node, new, f'device string "xla" -> {ACCELERATOR_TYPE}', code="NRN314", imports=imports)
            return
        self.replace(node, lambda n: with_string_value(n, "neuron"), 'device string "xla" -> "neuron"', code="NRN314")  # type: ignore[arg-type]

    def _xla_device_position(self, node: cst.CSTNode) -> bool:
        held = holder_through_choices(self, node)
        if held is None:
            return False
        child, parent = held
        if isinstance(parent, cst.Arg):
            call = self.parent(parent)
            if not isinstance(call, cst.Call):
                return False
            if parent.keyword is not None:
                return parent.keyword.value in DEVICE_KEYWORDS
            return positional(call, 0) is parent and (self.matches(call.func, *_XLA_DEVICE_FIRST_ARG) or _is_to(call))
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return any(device_named(target) for target in targets)
        if isinstance(parent, cst.ComparisonTarget):
            parent = self.parent(parent)
        if isinstance(parent, cst.Comparison):
            operands = [parent.left, *(target.comparator for target in parent.comparisons)]
            return any(device_named(operand) for operand in operands)
        return False


def _elsewhere(names: set[str]) -> bool:
    return any(name.startswith(_OWNED_ELSEWHERE) for name in names)


def _is_to(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"
