"""NRN411: scripts that never compile get ``model.compile(backend="neuron", dynamic=False)`` once."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, cast

import libcst as cst
import libcst.matchers as m
from libcst.metadata import QualifiedNameProvider, QualifiedNameSource

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import add_keyword_keep_layout, keyword, positional
from porter.rules._lib.causal_masks import constructors_in, module_kind, unhinted_masks
from porter.rules._lib.hf import origin
from porter.rules._lib.nodes import dotted, method_name, string_value
from porter.rules._lib.tree import child_index, enclosing_function
from porter.rules._tables.compile import (
    COMPILE_KEYWORDS,
    COMPILE_SWITCH,
    FIXED_PADDING,
    PARAM_SWAPPING_MODULES,
    TEXT_PREPROCESS_CALLS,
    TEXT_WORDS,
    TOKENIZE_CALLS,
    VARYING_SHAPE_CALLS,
    VARYING_SHAPE_NAME,
)

# Optimizer constructors: torch.optim classes, and the CUDA-only ones other rules port.
_TORCH_OPTIMIZER = re.compile(r"^torch\.optim\.(\w+\.)?[A-Z]\w*$")
_OTHER_OPTIMIZER = re.compile(r"^(apex\.optimizers|bitsandbytes\.optim|torch_xla\.amp\.syncfree|timm\.optim|transformers)\.")
_OPTIMIZER_NAME = re.compile(r"(Adam|SGD|LAMB|Lamb|Lion|Adafactor|RMSprop|Adagrad|Adadelta|Muon|Sophia|Shampoo|Optimizer)\w*$")
# Factories that take the model itself: timm's create_optimizer_v2(model, ...) and legacy
# create_optimizer(args, model); nanoGPT's model.configure_optimizers().
_FACTORY = re.compile(r"(^|\.)create_optimizer_v2$")
_LEGACY_FACTORY = re.compile(r"(^|\.)create_optimizer$")
_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    }
)
_SHARDERS = frozenset({"torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard"})
# FSDP1: Dynamo traces it only with use_orig_params=True (the flat parameters hide the module's own).
_FSDP1 = frozenset(
    {
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    }
)
_ACCELERATOR = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
# Methods that run the model with shapes that vary call by call (decoding grows the sequence).
STATIC_PADDING_CODE = "NRN711"  # the padding rule, which fixes a library tokenizer's padding in the same pass
_VARYING_SHAPE_METHODS = frozenset({"generate", "sample", "beam_search", "greedy_search"})
# Batching that pads each batch to its own longest sequence: a new shape per batch (variable-length seq2seq).
_PAD_TO_LONGEST = frozenset({"torch.nn.utils.rnn.pad_sequence"})
# Recurrent torch modules: Dynamo skips their forward unless torch._dynamo.config.allow_rnn is set.
_RNN_MODULES = frozenset({"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN", "torch.nn.modules.rnn.LSTM", "torch.nn.modules.rnn.GRU", "torch.nn.modules.rnn.RNN"})
_PLACEMENT = frozenset({"to", "cuda", "neuron", "train", "eval", "float", "half", "bfloat16", "requires_grad_"})

# Peak-memory counters of any backend (the file may already be ported: a second pass must agree).
_MEMORY_API = re.compile(r"^torch\.(cuda|neuron|xpu|mps|accelerator)(\.memory)?\.(reset_peak_memory_stats|reset_max_memory_allocated|max_memory_allocated|max_memory_reserved)$")

# Helpers named for the peak counters (by name: another library's, e.g. torchrl's
# reset_cuda_peak_stats / cuda_memory_stats).
_RESET_PEAK = re.compile(r"(?i)^reset_\w*peak\w*$")
_READ_PEAK = re.compile(r"(?i)^\w*(max_memory|memory_stats|peak_memory)\w*$")

_HF_PACKAGES = ("transformers.", "trl.", "optimum.", "setfit.")

# Compile hazards in a forward (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile); AWS Neuron docs, about PyTorch on Neuron (torch/about-pytorch-neuron)): host reads, data-dependent shapes, printing.
_HAZARD_METHODS = frozenset({"item", "tolist", "numpy", "nonzero", "unique", "masked_select", "argwhere"})
_HAZARD_FUNCTIONS = frozenset(
    {"torch.nonzero", "torch.unique", "torch.masked_select", "torch.argwhere", "torch.unique_consecutive"}
)
_VALUE_METHODS = frozenset(
    {"any", "all", "sum", "max", "min", "mean", "norm", "isnan", "isinf", "isfinite", "equal", "allclose", "item", "eq", "ne"}
)
_STATIC_TORCH = frozenset(
    {
        "torch.is_tensor",
        "torch.is_grad_enabled",
        "torch.is_autocast_enabled",
        "torch.is_floating_point",
        "torch.jit.is_scripting",
        "torch.jit.is_tracing",
        "torch.compiler.is_compiling",
        "torch._dynamo.is_compiling",
    }
)
_LOGGING = re.compile(r"^(print|logging\.\w+|logger\.\w+|log\.\w+|warnings\.warn)$")


Qualify = Callable[[cst.CSTNode], set[str]]
# A script's own compile settings or helpers: compile_cfg, compile_enabled, compile_mode, compile_with_warmup.
_COMPILE_CONFIG_NAME = re.compile(r"(?i)^compile_(cfg|config|enabled|mode|options|kwargs|backend|model|with_\w+)$")


@dataclass(frozen=True)
class _Site:
    """Where to insert: after (or before) ``anchor`` in its block, compiling ``name``."""

    name: str
    anchor: cst.BaseStatement
    before: bool
    builder: cst.BaseExpression | None
    fsdp: cst.Call | None = None  # an FSDP1 wrap compiled after: needs use_orig_params=True


class CompileInsert(Rule):
    """Insert ``model.compile(backend="neuron", dynamic=False)`` into scripts that never compile.

    What it does:
        In a file with no ``torch.compile``/``X.compile(...)`` and no compile switch of its own, finds
        the model: the variable whose ``.parameters()``/``.named_parameters()`` feeds an optimizer
        constructor (directly, through a params variable or a ``for ... in model.named_parameters()``
        loop in the same block), or the argument of ``create_optimizer[_v2](model, ...)`` /
        receiver of ``model.configure_optimizers(...)``, or the argument of a function of the file that
        builds an optimizer from its parameter's ``.parameters()``. A model a class stores
        (``Trainer.__init__(self, model)`` with ``self.model = model.to(device)`` and the optimizer
        built there, the model built by the caller: ``model = GPT(cfg); Trainer(model, ...)``) is
        compiled as ``self.model`` after it is stored; when the file also drives it with
        ``generate()``, the training step's forward gets its own compiled object instead
        (``self.compiled_model = torch.compile(self.model, ...)``, called where the step's
        ``.backward()`` method called the model; ``generate`` stays eager), or, with no such step
        in the class, an NRN413 marker at the model's construction. A file with no optimizer at all
        (manual SGD: ``p.data.add_(p.grad, alpha=-lr)``) finds the model by ``loss.backward()``: the
        variable called in what the loss is computed from (``loss = criterion(model(x), y)``, one
        assignment back; not a torch loss module, nor a function or class of the file, nor a
        parameter of the function that it never uses as a module (``loss_fct=None`` may hold any
        callable; ``model.to(device)`` / ``model.parameters()`` say it is one), followed out of nested
        functions (``def train()`` inside ``main()``) to where it is built. A compile is never
        inserted inside the step loop (a loop whose body calls ``.backward()``): a model picked per
        step from a list (``m = models[i]``) is compiled in the loop that places the list's models
        (``for m in models: m.to(device)``), or not at all. A one-shot benchmark that resets and reads
        the peak-memory counter around its ``.backward()`` is not compiled: it measures the eager
        program. A model
        class with a recurrent torch module (``nn.LSTM``, ``getattr(nn, rnn_type)``) gets
        ``torch._dynamo.config.allow_rnn = True`` before the compile (Dynamo skips RNN frames
        otherwise: zero graphs, measured on torch 2.13), unless the RNN has dropout between
        layers (more than one layer, dropout not a literal 0): torch 2.13's RNN decomposition never
        applies that dropout (``torch/_decomp/decompositions.py`` ``_rnn_helper``; measured: the
        compiled loss equals the eager loss without dropout), so NRN413 marks it, not compiled. Aliases (``model_without_ddp =
        model``, ``model.module``) and ``DistributedDataParallel``/``DataParallel``/FSDP wraps or
        ``fully_shard`` calls (also inside ``if`` branches) are followed back to the variable the model
        was built into. It then inserts
        ``model.compile(backend="neuron", dynamic=False)`` once, right after the last statement before
        the optimizer (and before a DDP/DataParallel wrap, nanoGPT's order) that assigns the model or
        one of its parts (``model.fc = ...``), calls a method on it (other than reads such as
        ``.parameters()``) or passes it to a function (other than ``print``/``len``) — i.e. after it
        is built, its weights loaded and it is placed on its device. After an FSDP wrap or
        ``fully_shard(model)`` instead (Dynamo traces the sharded module); an FSDP1 wrap gets
        ``use_orig_params=True`` (an explicit ``False`` gets an NRN413 marker, no compile). A trained
        part (``model.fc.parameters()``: a head on a frozen backbone) compiles the whole model. In an
        Accelerate script whose ``accelerator.prepare(...)`` gets the model, the ``Accelerator(...)``
        gets ``dynamo_plugin=TorchDynamoPlugin(backend="neuron", dynamic=False)`` instead
        (Accelerate compiles after its own wrap). A model the file also drives with varying shapes
        (``model.generate(...)``, also through ``accelerator.unwrap_model(model)``; batches from
        ``pad_sequence``; detection multi-scale inputs: a ``multi_scale`` option, ``RandomResize``,
        ``nested_tensor_from_tensor_list``; a ``collate_fn`` of the file that tokenizes each batch
        without ``padding="max_length"``, found by its name among the file's defs) is not compiled in place: NRN413 marks it, naming the
        shape source and what to do (a separately compiled training step, or fixed input sizes). ``fullgraph=True`` is added only when the
        model's class is defined in the file and its ``forward`` (with the methods, helper functions
        and submodule classes of the file it uses) shows none of the compile hazards: ``.item()``,
        ``.tolist()``, ``.numpy()``, ``nonzero``/``unique``/``masked_select``, boolean-mask indexing,
        ``if``/``while``/``assert`` tests that read tensor values (``.any()``, ``.sum()``, ``torch.*``
        calls), ``print``/logging. With ``--style accelerator`` the backend is left to auto-selection.
        When the model is an instance of a ``torch.nn`` class itself (``nn.Sequential(...)``), NRN412
        marks it instead: ``nn.Module.compile`` compiles ``_call_impl`` and Dynamo skips torch's own
        frames, so no graph is compiled (measured on torch 2.13; tested in tests/test_compile_optim.py).

    Why:
        On Trainium eager mode runs op by op; whole-graph compilation through ``backend="neuron"`` is
        what makes training fast (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)). The in-place ``nn.Module.compile`` keeps ``state_dict()``
        keys; ``model = torch.compile(model)`` returns a wrapper whose keys gain an ``_orig_mod.``
        prefix and breaks loading existing checkpoints. Compiling before the DDP wrap is the order
        nanoGPT uses. ``dynamic=False`` because TorchNeuron rejects dynamic shapes (AWS Neuron docs, torch.compile reference (torch/compile/reference-torch-compile); AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile));
        ``fullgraph=True`` is recommended but raises on any graph break, hence only with a clean forward
        (never under FSDP, whose units break the graph). With ``dynamic=False`` every new sequence
        length of ``generate()`` is a full Neuron compile. Accelerate 1.15 knows the neuron Dynamo
        backend (neuron-torch-neuronx source, torch_neuronx/neuron.py); its plugin's ``dynamic`` defaults to None (automatic dynamic
        shapes), hence written out.

    Before:
        model = Net().to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    After:
        model = Net().to(device)
        model.compile(backend="neuron", dynamic=False, fullgraph=True)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    Safety:
        Review: compilation adds start-up time, and graph breaks or recompiles show up only when the
        script runs (``porter check`` reports them). ``backend="neuron"`` needs torch-neuronx, also on
        a CPU fallback branch the script may keep (as the rest of the port does); ``--style
        accelerator`` leaves the backend unset. Never inserted when ``--no-compile-insertion`` is
        given, in Hugging Face ``Trainer``/``TrainingArguments`` scripts (the HF rules set
        ``torch_compile`` there), or when the script has a compile switch or configuration of its
        own (``compile = False``, ``--compile``, a read of ``args.compile`` /
        ``cfg.optimization.compile`` / ``config["compile"]`` / ``cfg.get("use_compile")``, a
        ``compile_cfg``/``compile_enabled`` variable, a ``compile_with_warmup`` helper): what to
        compile is the user's choice there (and that path is ported by NRN401). Known misses: a model
        whose optimizer is built in another function or file than the model (no insertion, except
        a class that stores it, above), a model
        that reaches the optimizer through a container or another object's attribute (``self.model``
        is followed), and hazards hidden in code of other files (``fullgraph=True`` is then left out,
        never guessed). The hazard scan is syntactic: a hazard it does not list (a data-dependent
        Python ``for`` over a tensor, a call into an unknown library) makes ``fullgraph=True`` raise at
        the first step, which ``porter check`` reports as a graph break.
    """

    code: ClassVar[str] = "NRN411"
    name: ClassVar[str] = "compile-insert"
    summary: ClassVar[str] = 'scripts with no compile: insert model.compile(backend="neuron", dynamic=False) after the model is placed'
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("parameters()", "create_optimizer", "configure_optimizers", ".backward(")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN412": "model is a torch.nn module itself (nn.Sequential): in-place compile compiles nothing; review marker",
        "NRN413": "model not compiled in place: it also runs with varying shapes (generate), an FSDP1 wrap without use_orig_params, or an RNN with dropout between layers (review marker)",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 65
    # module-level function name -> (its parameters, the one an optimizer is built from), per file
    _optimizer_functions: dict[str, tuple[list[str], str] | None] | None = None

    def visit_Module(self, node: cst.Module) -> None:
        if not self.options.insert_compile or self._excluded(node):
            return
        done: set[tuple[int, str]] = set()
        found = False
        for call in child_index(self).find(node, cst.Call):
            assert isinstance(call, cst.Call)
            name = self._model_of_optimizer(call)
            if name is None:
                continue
            found = True
            site = self._site(call, name)
            if site is None:
                self._class_route(node, call, name, done)
                continue
            self._handle(node, site, done)
        if not found:  # no optimizer names the model (manual SGD): the forward call that feeds backward()
            for call in child_index(self).find(node, cst.Call):
                assert isinstance(call, cst.Call)
                if method_name(call) == "backward" and isinstance(call.func, cst.Attribute):
                    self._backward_route(node, call, done)

    def _handle(self, module: cst.Module, site: _Site, done: set[tuple[int, str]]) -> None:
        loop = self._step_loop_holding(site.anchor)
        if loop is not None:  # never compile once per step: compile where the models are set up, or not at all
            moved = self._setup_site(loop, site)
            if moved is None:
                return
            site = moved
        if self._measures_eager_memory(site.anchor):
            return
        key = (id(self.parent(site.anchor)), site.name)
        if key in done:
            return
        done.add(key)
        if self._accelerate_route(module, site):
            return
        swapping = self._swaps_parameters(site)
        if swapping is not None and self.options.selects("NRN415") and site.name in _update_step_losses(self, module):
            return  # NRN415 (compile_update) compiles its training step as one update function
        if swapping is not None:
            self.mark(
                site.anchor,
                f"not compiled: {site.name} is a library module whose forward swaps its parameters in per call ({swapping}): "
                "compiled, it recompiles at every step on those tensors' identity guards; compile the networks it calls instead",
                code="NRN413",
            )
            return
        self._insert(module, site)

    def _swaps_parameters(self, site: _Site) -> str | None:
        """Why the module ``site`` compiles is built by a library class that swaps parameters per call."""
        builder = site.builder
        while isinstance(builder, cst.Call) and isinstance(builder.func, cst.Attribute) and method_name(builder) in {"to", "cuda"}:
            builder = builder.func.value  # Loss(...).to(device)
        if not isinstance(builder, cst.Call):
            return None
        for prefix, why in PARAM_SWAPPING_MODULES:
            if self.matches_prefix(builder.func, prefix):
                return why
        return None

    def _step_loop_holding(self, statement: cst.BaseStatement) -> cst.For | cst.While | None:
        """The outermost loop around ``statement`` (in its function) whose body calls ``.backward()``."""
        found: cst.For | cst.While | None = None
        for ancestor in self.ancestors(statement):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                break
            if isinstance(ancestor, (cst.For, cst.While)) and any(
                isinstance(n, cst.Call) and method_name(n) == "backward" for n in child_index(self).walk(ancestor.body)
            ):
                found = ancestor
        return found

    def _setup_site(self, loop: cst.For | cst.While, site: _Site) -> _Site | None:
        """``loss_model = loss_models[idx]`` inside the step loop: the models were placed earlier in
        ``for loss_model in loss_models: loss_model.to(device)``; compile each one there, once."""
        builder = site.builder
        if not (isinstance(builder, cst.Subscript) and isinstance(builder.value, cst.Name)):
            return None
        models = builder.value.value
        body, index = self._block_of(loop)
        for statement in reversed(list(body[:index])):
            if not (isinstance(statement, cst.For) and isinstance(statement.iter, cst.Name) and statement.iter.value == models):
                continue
            if not isinstance(statement.target, cst.Name) or not isinstance(statement.body, cst.IndentedBlock):
                continue
            each = statement.target.value
            placed = [
                s for s in statement.body.body
                if any(
                    isinstance(n, cst.Call) and method_name(n) in {"to", "cuda", "neuron"} and _root_name(n) == each
                    for n in child_index(self).walk(s)
                )
            ]
            if placed:
                return _Site(each, placed[-1], before=False, builder=None)
        return None

    def _measures_eager_memory(self, statement: cst.BaseStatement) -> bool:
        """A one-shot benchmark (no loop around its ``.backward()``) that resets the peak-memory counter
        and reads it back: its output is the eager program's memory, which a compile would change."""
        function = enclosing_function(self, statement)
        if function is None:
            return False
        reset = read = False
        for node in child_index(self).walk(function.body):
            if not isinstance(node, cst.Call):
                continue
            if method_name(node) == "backward" and self._step_loop_holding(self.statement_of(node)) is not None:
                return False
            for name in self.qualified(node.func) or {dotted(node.func) or ""}:
                last = name.rsplit(".", 1)[-1]
                if _MEMORY_API.match(name):
                    reset |= last.startswith("reset_")
                    read |= last.startswith("max_memory_")
                else:  # a library's helpers for the same counters (torchrl's reset_cuda_peak_stats)
                    reset |= bool(_RESET_PEAK.match(last))
                    read |= bool(_READ_PEAK.match(last))
        return reset and read

    # ----------------------------------------------------------------- a model stored by a class
    def _class_route(self, module: cst.Module, call: cst.Call, name: str, done: set[tuple[int, str]]) -> None:
        """``Trainer.__init__(self, model)`` stores ``self.model = model.to(device)`` and builds the
        optimizer; the model is built by the caller (``model = GPT(cfg); Trainer(model, ...)``).
        Compile ``self.model`` in place after it is stored, or, when the file also drives the model
        with varying shapes (``model.generate``), compile a separate object for the training step's
        forward call (``self.compiled_model = torch.compile(self.model, ...)``, called where the
        step called the model); no such call in view: an NRN413 marker at the model's construction."""
        method = enclosing_function(self, call)
        cls = _class_of(self, method) if method is not None else None
        if method is None or cls is None or name not in [p.name.value for p in method.params.params]:
            return
        statement = self.statement_of(call)
        body, index = self._block_of(statement)
        stored = [(i, attr) for i, s in enumerate(body[:index]) for attr in _stored_attributes(s, name)]
        if not stored:
            return
        position, attr = stored[-1]
        target = f"self.{attr}"
        mentions = [s for s in body[position:index] if _mentions(s, name) or _mentions(s, target)]
        anchor = mentions[-1] if mentions else body[position]
        builder = self._caller_builder(module, cls, method, name)
        site = _Site(target, anchor, before=False, builder=builder)
        key = (id(self.parent(anchor)), target)
        if key in done:
            return
        done.add(key)
        varying = self._varying_shapes(module, name) or self._varying_shapes(module, target)
        if varying is None or (builder is not None and self._torch_native(builder)):
            self._insert(module, site)
            return
        if "per batch" in varying or "pad_sequence" in varying:
            self._mark_varying(site, varying)  # the training inputs themselves vary: no compiled step helps
            return
        forwards = self._step_forwards(cls, attr)
        compiled = f"self.compiled_{attr}"
        if not forwards or any(_root_name(n) == compiled for n in m.findall(cls, m.Attribute())):  # type: ignore[arg-type]
            where = builder if builder is not None else anchor
            self.mark(
                where,
                f"not compiled: {name} also runs {varying} (a new sequence length each call; with dynamic=False each is a "
                f"full Neuron compile) and {cls.name.value}'s training step is not in view: compile a separate object for "
                f'its forward, e.g. torch.compile({target}, backend="neuron", dynamic=False)',
                code="NRN413",
            )
            return
        rnn = self._rnn_dropout(module, builder)
        if rnn is not None:
            self._mark_rnn_dropout(site, rnn)
            return
        arguments = self._arguments(module, site)
        text = f"{compiled} = torch.compile({target}, {', '.join(arguments)})"
        self.insert_after(
            anchor,
            [*self._rnn_switch(module, builder), cst.parse_statement(text + "\n")],
            f"{text} inserted for the training step's forward ({varying} keeps running {name} eagerly: an in-place "
            "compile would recompile for each new length); the step calls it, state_dict keys are unchanged",
            imports=(ImportSpec("torch"),),
        )
        for forward in forwards:
            self.replace(forward.func, cst.parse_expression(compiled), None)

    def _step_forwards(self, cls: cst.ClassDef, attr: str) -> list[cst.Call]:
        """Calls of the stored model (``self.model(x)``, or ``model(x)`` after ``model = self.model``)
        in the class's methods that call ``.backward()``: the training step's forward."""
        found: list[cst.Call] = []
        for method in cls.body.body:
            if not isinstance(method, cst.FunctionDef):
                continue
            calls = cast("list[cst.Call]", m.findall(method, m.Call()))
            if not any(method_name(c) == "backward" for c in calls):
                continue
            aliases = {
                b
                for a in cast("list[cst.Assign]", m.findall(method, m.Assign()))
                if _root_name(a.value) == f"self.{attr}" and not isinstance(a.value, cst.Call)
                for t in a.targets
                for b in _bound_names(t.target)
            }
            for c in calls:
                if (isinstance(c.func, cst.Name) and c.func.value in aliases) or (
                    isinstance(c.func, cst.Attribute) and dotted(c.func) == f"self.{attr}"
                ):
                    found.append(c)
        return found

    def _caller_builder(
        self, module: cst.Module, cls: cst.ClassDef, method: cst.FunctionDef, name: str
    ) -> cst.BaseExpression | None:
        """What the caller built the model with: ``GPT(cfg)`` for ``model = GPT(cfg); Trainer(model)``."""
        if method.name.value != "__init__":
            return None
        params = [p.name.value for p in method.params.params]
        for call in cast("list[cst.Call]", child_index(self).find(module, cst.Call)):
            if not (isinstance(call.func, cst.Name) and call.func.value == cls.name.value):
                continue
            arg = positional(call, params.index(name) - 1) or keyword(call, name)
            if arg is not None and isinstance(arg.value, cst.Call) and _root_name(arg.value) is None:
                return arg.value  # Trainer(Net(), ...): built in the call
            root = _root_name(arg.value) if arg is not None else None
            if root is None:
                continue
            current: cst.CSTNode = self.statement_of(call)
            while isinstance(current, cst.BaseStatement):
                body, index = self._block_of(current)
                built = self._builder(list(body[:index]), root)
                if built is not None:
                    return built
                parent = self.parent(current)
                if parent is None or isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Module)):
                    break
                current = parent  # type: ignore[assignment]
                while current is not None and not isinstance(current, cst.BaseStatement):
                    current = self.parent(current)  # type: ignore[assignment]
        return None

    # ----------------------------------------------------------------- no optimizer: backward()
    def _backward_route(self, module: cst.Module, backward: cst.Call, done: set[tuple[int, str]]) -> None:
        """``loss = criterion(model(x), y); loss.backward()`` with a hand-written update
        (``p.data.add_(p.grad, alpha=-lr)``): the model is the variable called in the values the
        loss is computed from (one assignment back), built from a class that is not a torch loss."""
        loss = backward.func.value  # type: ignore[attr-defined]
        if not isinstance(loss, cst.Name):
            return
        scope: cst.CSTNode = enclosing_function(self, backward) or module
        assigned: dict[str, list[cst.BaseExpression]] = {}
        for a in cast("list[cst.Assign]", m.findall(scope, m.Assign())):
            for t in a.targets:
                for b in _bound_names(t.target):
                    assigned.setdefault(b, []).append(a.value)
        values = list(assigned.get(loss.value, ()))
        for value in list(values):
            for n in cast("list[cst.Name]", m.findall(value, m.Name())):
                values.extend(assigned.get(n.value, ()) if n.value != loss.value else ())
        defined = {s.name.value for s in cast("list[cst.FunctionDef | cst.ClassDef]", child_index(self).find(module, cst.FunctionDef, cst.ClassDef))}
        function = enclosing_function(self, backward)
        # A parameter may hold any callable the caller passes (``loss_fct=None`` then a default loss):
        # a plain function has no ``.compile``, and a loss the user chose is not the model; unless
        # the function itself treats it as a module (``model.to(device)``, ``model.parameters()``).
        parameters = {p.name.value for p in function.params.params} if function is not None else set()
        for value in values:
            for c in cast("list[cst.Call]", m.findall(value, m.Call())):
                if not isinstance(c.func, cst.Name) or c.func.value in defined or self._imported(c.func):
                    continue
                if c.func.value in parameters and not _used_as_module(self, function, c.func.value):
                    continue
                site = self._closure_site(self.statement_of(backward), c.func.value)
                if site is not None and site.builder is not None and not self._torch_loss(site.builder):
                    self._handle(module, site, done)
                    return

    def _torch_loss(self, builder: cst.BaseExpression) -> bool:
        if isinstance(builder, cst.IfExp):  # nn.BCEWithLogitsLoss() if binary else nn.CrossEntropyLoss()
            return self._torch_loss(builder.body) or self._torch_loss(builder.orelse)
        func = builder.func if isinstance(builder, cst.Call) else builder
        return any(q.startswith("torch.nn.") and q.endswith("Loss") for q in self.qualified(func))

    def _closure_site(self, statement: cst.BaseStatement, name: str) -> _Site | None:
        """Like ``_site``, through nested function definitions: a ``def train()`` inside ``main()``
        uses ``main``'s ``model`` (not when ``train`` takes a parameter of that name)."""
        current: cst.CSTNode = statement
        while True:
            if isinstance(current, cst.BaseStatement):
                body, index = self._block_of(current)
                earlier = list(body[:index])
                if any(_binds_any(s, {name}) for s in earlier if not isinstance(s, (cst.FunctionDef, cst.ClassDef))):
                    return self._site_in(earlier, name)
            parent = self.parent(current)
            if parent is None or isinstance(parent, (cst.ClassDef, cst.Module)):
                return None
            if isinstance(parent, cst.FunctionDef) and name in {p.name.value for p in parent.params.params}:
                return None
            current = parent

    # ----------------------------------------------------------------- Accelerate compiles itself
    def _accelerate_route(self, module: cst.Module, site: _Site) -> bool:
        """An ``Accelerator`` whose ``prepare(...)`` gets the model: compile through Accelerate
        (it compiles after its own DDP/FSDP wrap), never in place before ``prepare``."""
        calls = cast("list[cst.Call]", child_index(self).find(module, cst.Call))
        accelerators = [c for c in calls if self.matches(c.func, *_ACCELERATOR)]
        prepared = any(
            method_name(c) == "prepare"
            and "accelerator" in (dotted(c.func) or "").lower()
            and any(_root_name(a.value) == site.name for a in c.args)
            for c in calls
        )
        if not prepared:
            return False
        if not accelerators:  # built in another file: its Accelerator(...) is where compile belongs
            self.mark(
                site.anchor,
                f"not compiled here: {site.name} goes through accelerator.prepare(); build the Accelerator with "
                'dynamo_plugin=TorchDynamoPlugin(backend="neuron", dynamic=False) so it compiles after its wrap',
                code="NRN413",
            )
            return True
        for call in accelerators:
            assert isinstance(call, cst.Call)
            if any(a.star for a in call.args) or keyword(call, "dynamo_backend") or keyword(call, "dynamo_plugin"):
                continue  # the user's (or a config's) compile choice
            if self._varying_shapes(module, site.name):
                self._mark_varying(site)
                continue
            backend = "" if self.options.style == "accelerator" else 'backend="neuron", '
            plugin = cst.parse_expression(f"TorchDynamoPlugin({backend}dynamic=False)")
            self.replace(
                call,
                lambda n, plugin=plugin: add_keyword_keep_layout(n, "dynamo_plugin", plugin),  # type: ignore[misc, arg-type]
                f"Accelerator(dynamo_plugin=TorchDynamoPlugin({backend}dynamic=False)): Accelerate compiles the model "
                "in prepare(), after its DDP/FSDP wrap (in-place compile before prepare() would be wrapped again)",
                imports=(ImportSpec("accelerate.utils", "TorchDynamoPlugin"),),
            )
        return True

    # ----------------------------------------------------------------- varying shapes
    def _varying_shapes(self, module: cst.Module, name: str) -> str | None:
        """The call that drives ``name`` with shapes that change call by call (``model.generate``,
        also through ``accelerator.unwrap_model(model)`` / ``model.module``), or None."""
        for call in child_index(self).find(module, cst.Call):
            assert isinstance(call, cst.Call)
            if method_name(call) not in _VARYING_SHAPE_METHODS or not isinstance(call.func, cst.Attribute):
                continue
            receiver = call.func.value
            if isinstance(receiver, cst.Call) and method_name(receiver) == "unwrap_model" and receiver.args:
                receiver = receiver.args[0].value
            if _root_name(receiver) == name:
                return f"{dotted(call.func) or 'model.generate'}(...)"
        for call in child_index(self).find(module, cst.Call):
            assert isinstance(call, cst.Call)
            if self.matches(call.func, *_PAD_TO_LONGEST):
                return "batches from pad_sequence(...) (each padded to its own longest sequence)"
            last = (dotted(call.func) or "").rsplit(".", 1)[-1]
            if last in VARYING_SHAPE_CALLS:
                return f"inputs from {last}(...) (a new image size per batch)"
        for node in child_index(self).find(module, cst.Name):
            assert isinstance(node, cst.Name)
            if VARYING_SHAPE_NAME.match(node.value):
                return f"multi-scale inputs ({node.value}: a new image size per batch)"
        return self._tokenizing_collate(module)

    def _tokenizing_collate(self, module: cst.Module) -> str | None:
        """A ``collate_fn`` of this file (``loader.collate_fn = self.collate``, ``DataLoader(...,
        collate_fn=collate)``) that tokenizes each batch without a fixed length: every batch is padded
        to its own longest text. The function is found by its last name among the file's defs."""
        index = child_index(self)
        given: list[cst.BaseExpression] = []
        for node in index.preorder:
            if isinstance(node, cst.Assign) and any(
                isinstance(t.target, cst.Attribute) and t.target.attr.value == "collate_fn" for t in node.targets
            ):
                given.append(node.value)
            elif isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "collate_fn":
                given.append(node.value)
        names = {(dotted(value) or "").rsplit(".", 1)[-1] for value in given} - {""}
        if not names:
            return None
        for function in index.find(module, cst.FunctionDef):
            assert isinstance(function, cst.FunctionDef)
            if function.name.value not in names:
                continue
            for call in index.find(function, cst.Call):
                assert isinstance(call, cst.Call)
                callee = dotted(call.func) or ""
                last = callee.rsplit(".", 1)[-1].lower()
                if last not in TOKENIZE_CALLS and not (last in TEXT_PREPROCESS_CALLS and self._reads_texts(call)):
                    continue
                padding = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "padding"), None)
                if padding is not None and string_value(padding) == FIXED_PADDING:
                    continue
                if any(a.keyword is not None and a.keyword.value == "pad_to_multiple_of" for a in call.args):
                    continue  # bounded: a few shapes
                receiver = call.func.value if isinstance(call.func, cst.Attribute) else call.func
                if self.options.selects(STATIC_PADDING_CODE) and origin(self, receiver) == "library":
                    continue  # NRN711 pads a library tokenizer to max_length or a multiple in this pass
                holder = next((dotted(v) for v in given if (dotted(v) or "").endswith(function.name.value)), None) or function.name.value
                return f"batches from {holder} (tokenized per batch by {callee}(...), no fixed length in view)"
        return None

    def _reads_texts(self, call: cst.Call) -> bool:
        """The statement holding ``call`` reads a name for texts (``texts``, ``sentences``)."""
        return any(
            isinstance(inner, cst.Name) and any(word in inner.value.lower() for word in TEXT_WORDS)
            for inner in child_index(self).walk(self.statement_of(call))
        )

    def _mark_varying(self, site: _Site, where: str | None = None) -> None:
        shape = where or self._varying_shapes(self.context.module, site.name) or "generate()"
        if "pad_sequence" in shape or "per batch" in shape:
            message = (
                f"not compiled: {site.name} trains on {shape}: with dynamic=False every new shape is a full "
                "Neuron compile; pad inputs to fixed sizes (a max_length, multiples of 128, a few fixed image sizes), then compile"
            )
        else:
            message = (
                f"not compiled: {site.name} also runs {shape} (a new sequence length each call; with dynamic=False each "
                "is a full Neuron compile): compile a separate training-step function instead, e.g. "
                'torch.compile(train_step, backend="neuron", dynamic=False)'
            )
        self.mark(site.anchor, message, code="NRN413")

    # ----------------------------------------------------------------- when not to insert
    def _excluded(self, module: cst.Module) -> bool:
        return self._hf_trainer(module) or self._compiles(module) or self._has_switch(module)

    def _hf_trainer(self, module: cst.Module) -> bool:
        """A Hugging Face ``Trainer``/``TrainingArguments`` (or TRL trainer/config) is built here."""
        for node in child_index(self).find(module, cst.Call, cst.ClassDef):
            if isinstance(node, cst.ClassDef):  # class MyTrainer(Trainer): a subclass counts too
                targets = [base.value for base in node.bases]
            else:
                assert isinstance(node, cst.Call)
                targets = [node.func]
            if any(self._hf_name(target) for target in targets):
                return True
        return False

    def _hf_name(self, target: cst.BaseExpression) -> bool:
        spelled = (dotted(target) or "").split(".")[-1]
        qualified = self.qualified(target)
        if spelled in {"Trainer", "TrainingArguments"} and not qualified:
            return True  # not resolvable (star import): trust the spelling
        for name in qualified:
            short = name.rsplit(".", 1)[-1]
            if not name.startswith(_HF_PACKAGES) or not short.endswith(("Trainer", "TrainingArguments", "Config")):
                continue
            if name.startswith("transformers.") and short.endswith("Config"):
                continue  # BertConfig & co. are model configs
            return True
        return False

    def _compiles(self, module: cst.Module) -> bool:
        for node in cast("list[cst.Call | cst.Decorator]", child_index(self).find(module, cst.Call, cst.Decorator)):
            target = node.decorator if isinstance(node, cst.Decorator) else node.func
            if self.matches(target, "torch.compile"):
                return True
            if isinstance(node, cst.Call) and method_name(node) == "compile" and not self._imported(node.func):
                if all(arg.keyword is not None and arg.keyword.value in COMPILE_KEYWORDS for arg in node.args):
                    return True
        return False

    def _has_switch(self, module: cst.Module) -> bool:
        return self._assigned_switch(module) or self._config_switch(module)

    def _config_switch(self, module: cst.Module) -> bool:
        """The script reads its own compile configuration: ``cfg.optimization.compile``,
        ``config["compile"]``, ``cfg.get("use_compile")``, a ``compile_cfg``/``compile_enabled``
        variable or a ``compile_with_warmup(...)`` helper: compiling is the user's choice there."""
        for node in child_index(self).find(module, cst.Attribute, cst.SimpleString, cst.Name):
            if isinstance(node, cst.Attribute):
                parent = self.parent(node)
                called = isinstance(parent, cst.Call) and parent.func is node
                if not called and COMPILE_SWITCH.match(node.attr.value):
                    return True
            elif isinstance(node, cst.SimpleString):
                key = string_value(node)
                parent = self.parent(node)
                holder = self.parent(parent) if isinstance(parent, (cst.Index, cst.Arg)) else None
                getter = isinstance(holder, cst.Call) and (method_name(holder) in {"get", "pop"} or dotted(holder.func) in {"getattr", "hasattr"})
                if key is not None and COMPILE_SWITCH.match(key) and (isinstance(holder, cst.SubscriptElement) or getter):
                    return True
            elif isinstance(node, cst.Name) and _COMPILE_CONFIG_NAME.match(node.value):
                return True
        return False

    def _assigned_switch(self, module: cst.Module) -> bool:
        nodes = cast("list[cst.Assign | cst.AnnAssign | cst.Call]", child_index(self).find(module, cst.Assign, cst.AnnAssign, cst.Call))
        for node in nodes:
            if isinstance(node, cst.Call):
                if method_name(node) == "add_argument" and any(
                    COMPILE_SWITCH.match((string_value(a.value) or "").lstrip("-").replace("-", "_"))
                    for a in node.args
                    if a.keyword is None
                ):
                    return True
                if any(a.keyword is not None and COMPILE_SWITCH.match(a.keyword.value) for a in node.args):
                    if method_name(node) != "compile" and not self.matches(node.func, "torch.compile"):
                        return True
                continue
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                text = dotted(target)
                if text is not None and COMPILE_SWITCH.match(text.split(".")[-1]):
                    return True
        return False

    def _imported(self, func: cst.BaseExpression) -> bool:
        root = func.value if isinstance(func, cst.Attribute) else func
        while isinstance(root, cst.Attribute):
            root = root.value
        names = self.get_metadata(QualifiedNameProvider, root, set())
        return any(name.source is QualifiedNameSource.IMPORT for name in names)

    # ----------------------------------------------------------------- finding the model
    def _model_of_optimizer(self, call: cst.Call) -> str | None:
        func_name = dotted(call.func) or ""
        if method_name(call) == "configure_optimizers" and isinstance(call.func, cst.Attribute):
            return _root_name(call.func.value)
        qualified = self.qualified(call.func)
        for pattern, index, name in ((_FACTORY, 0, "model_or_params"), (_LEGACY_FACTORY, 1, "model")):
            if any(pattern.search(q) for q in qualified) or pattern.search(func_name):
                arg = positional(call, index) or keyword(call, name)
                return _root_name(arg.value) if arg else None
        local = self._local_optimizer_function(call)
        if local is not None:
            return local
        if not self._is_optimizer(call):
            return None
        found = _parameters_owner(call)
        if found is not None:
            return found
        return self._through_variables(call)

    def _is_optimizer(self, call: cst.Call) -> bool:
        """An optimizer constructor: torch.optim, apex/bnb/torch_xla/timm, or a name like ``Lion``."""
        qualified = self.qualified(call.func)
        if any(_TORCH_OPTIMIZER.match(q) and ".lr_scheduler." not in q for q in qualified):
            return True
        if any(_OTHER_OPTIMIZER.match(q) for q in qualified):
            return True
        func_name = dotted(call.func) or ""
        return bool(func_name) and bool(_OPTIMIZER_NAME.search(func_name.split(".")[-1]))

    def _local_optimizer_function(self, call: cst.Call) -> str | None:
        """``configure_optimizers(model, ...)`` where the file defines the function and it builds an
        optimizer from ``<param>.parameters()``: the argument given for that parameter."""
        if not isinstance(call.func, cst.Name):
            return None
        if self._optimizer_functions is None:  # once per file: this runs for every call of a plain name
            self._optimizer_functions = {}
            for statement in self.context.module.body:
                if isinstance(statement, cst.FunctionDef) and statement.name.value not in self._optimizer_functions:
                    self._optimizer_functions[statement.name.value] = self._optimizer_parameter(statement)
        found = self._optimizer_functions.get(call.func.value)
        if found is None:
            return None
        params, owner = found
        arg = positional(call, params.index(owner)) or keyword(call, owner)
        return _root_name(arg.value) if arg is not None else None

    def _optimizer_parameter(self, function: cst.FunctionDef) -> tuple[list[str], str] | None:
        """A module-level function's parameter names and the one whose ``.parameters()`` feed
        an optimizer it builds; None when it builds none from a parameter."""
        calls = (node for node in child_index(self).walk(function.body) if type(node) is cst.Call)  # the shared index: no libcst visit
        if not any(self._is_optimizer(c) for c in calls):  # type: ignore[arg-type]
            return None  # e.g. count_params(model): reads parameters, builds no optimizer
        params = [p.name.value for p in function.params.params]
        owner = _parameters_owner(function.body)
        if owner is None or owner not in params:
            return None
        return params, owner

    def _through_variables(self, call: cst.Call) -> str | None:
        """``params = [p for p in model.parameters() ...]`` or a loop over ``model.named_parameters()``."""
        names = {n.value for arg in call.args for n in cast("Sequence[cst.Name]", m.findall(arg.value, m.Name()))}
        body, index = self._block_of(self.statement_of(call))
        for statement in reversed(body[:index]):
            if _binds_any(statement, names) or isinstance(statement, cst.For):
                found = _parameters_owner(statement)
                if found is not None:
                    return found
        return None

    def _block_of(self, statement: cst.BaseStatement) -> tuple[Sequence[cst.BaseStatement], int]:
        block = self.parent(statement)
        body = getattr(block, "body", ())
        if not isinstance(body, (list, tuple)):
            return (), 0
        return body, next((i for i, s in enumerate(body) if s is statement), 0)

    # ----------------------------------------------------------------- where to insert
    def _site(self, call: cst.Call, name: str) -> _Site | None:
        statement = self.statement_of(call)
        # The innermost enclosing block (inside the same function) where the model is assigned.
        current: cst.CSTNode = statement
        while True:
            if isinstance(current, cst.BaseStatement):
                body, index = self._block_of(current)
                earlier = list(body[:index])
                if any(_binds_any(s, {name}) for s in earlier):
                    return self._site_in(earlier, name)
            parent = self.parent(current)
            if parent is None or isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Module)):
                return None
            current = parent

    def _site_in(self, earlier: list[cst.BaseStatement], name: str) -> _Site | None:
        family = self._family(earlier, name)
        for position, statement in enumerate(earlier):
            inner = self._wrap_in(statement, family)
            sharded = self._sharding_in(statement, family)
            if sharded is not None:  # FSDP/fully_shard: Dynamo traces the sharded module, so compile after
                target, fsdp = sharded
                builder = self._builder(earlier[:position], inner or target)
                return _Site(target, statement, before=False, builder=builder, fsdp=fsdp)
            if inner is not None:  # model = DDP(model) / ddp_model = DDP(model): compile before the wrap
                prior = [s for s in earlier[:position] if _mentions(s, inner)]
                builder = self._builder(earlier[:position], inner)
                if prior:
                    return _Site(inner, prior[-1], before=False, builder=builder)
                return _Site(inner, statement, before=True, builder=builder)
        # No wrap: compile the variable the model was built into (model_without_ddp = model -> model).
        built = [n for n in sorted(family) if self._builder(earlier, n) is not None]
        base = name if name in built or not built else built[0]
        mentions = [s for s in earlier if _mentions(s, base) and not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
        if not mentions:
            return None
        return _Site(base, mentions[-1], before=False, builder=self._builder(earlier, base))

    def _builder(self, statements: Sequence[cst.BaseStatement], name: str) -> cst.BaseExpression | None:
        """The expression that builds ``name`` last (``GPT(config)`` in ``model = GPT(config).to(device)``);
        aliases and wraps (``model = DDP(model)``) are not builds."""
        for statement in reversed(statements):
            for node in reversed(m.findall(statement, m.Assign())):
                assert isinstance(node, cst.Assign)
                if name not in {b for t in node.targets for b in _bound_names(t.target)}:
                    continue
                if self._link_source(node.value) is not None:
                    continue
                value = node.value
                while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and method_name(value) in _PLACEMENT:
                    value = value.func.value
                return value
        return None

    def _family(self, earlier: list[cst.BaseStatement], name: str) -> set[str]:
        """``name`` and the variables it is an alias or wrap of, or that alias or wrap it:
        ``model_without_ddp = model``, ``raw = model.module``, ``ddp_model = DDP(model)``."""
        links: list[tuple[set[str], str]] = []
        for statement in earlier:
            for assign in m.findall(statement, m.Assign()):
                assert isinstance(assign, cst.Assign)
                source = self._link_source(assign.value)
                if source is not None:
                    links.append(({b for t in assign.targets for b in _bound_names(t.target)}, source))
        family = {name}
        grown = True
        while grown:
            grown = False
            for targets, source in links:
                if (targets & family or source in family) and not (targets | {source}) <= family:
                    family |= targets | {source}
                    grown = True
        return family

    def _link_source(self, value: cst.BaseExpression) -> str | None:
        if isinstance(value, (cst.Name, cst.Attribute)):
            return _root_name(value)
        if isinstance(value, cst.Call) and self.matches(value.func, *_WRAPPERS):
            first = positional(value, 0) or keyword(value, "module")
            return _root_name(first.value) if first else None
        return None

    def _sharding_in(self, statement: cst.BaseStatement, family: set[str]) -> tuple[str, cst.Call | None] | None:
        """(what to compile, the FSDP1 call) for ``model = FSDP(model, ...)`` /
        ``fully_shard(model)`` in ``statement``: compile the wrapped model after the wrap."""
        for call in m.findall(statement, m.Call()):
            assert isinstance(call, cst.Call)
            fsdp1 = self.matches(call.func, *_FSDP1)
            if not fsdp1 and not self.matches(call.func, *_SHARDERS):
                continue
            first = positional(call, 0) or keyword(call, "module")
            inner = _root_name(first.value) if first else None
            if inner not in family:
                continue
            parent = self.parent(call)
            target = inner
            if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
                target = _root_name(parent.targets[0].target) or inner  # type: ignore[arg-type]
            return (target or "", call if fsdp1 else None)
        return None

    def _wrap_in(self, statement: cst.BaseStatement, family: set[str]) -> str | None:
        """The family member a DDP/DataParallel/FSDP wrap or ``fully_shard`` call in ``statement`` wraps."""
        for call in m.findall(statement, m.Call()):
            assert isinstance(call, cst.Call)
            if not self.matches(call.func, *_WRAPPERS, *_SHARDERS):
                continue
            first = positional(call, 0) or keyword(call, "module")
            inner = _root_name(first.value) if first else None
            if inner in family:
                return inner
        return None

    # ----------------------------------------------------------------- the insertion
    def _insert(self, module: cst.Module, site: _Site) -> None:
        arms = self._arms(site)
        if arms is not None:
            per_arm = [self._rnn_dropout(module, self._builder(arm, site.name)) for arm in arms]
            if any(per_arm) and not all(per_arm):  # `if args.model == "Transformer": ... else: RNNModel(...)`
                for arm, dropout in zip(arms, per_arm):
                    mentions = [s for s in arm if _mentions(s, site.name) and not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
                    inner = _Site(site.name, mentions[-1], before=False, builder=self._builder(arm, site.name))
                    if dropout is not None:
                        self._mark_rnn_dropout(inner, dropout)
                    else:
                        self._insert(module, inner)
                return
        if site.builder is not None and self._torch_native(site.builder):
            self.mark(
                site.builder,
                "a torch.nn class as model: model.compile() compiles no graph; wrap it in your own nn.Module",
                code="NRN412",
            )
            return
        varying = self._varying_shapes(module, site.name)
        if varying is not None:
            self._mark_varying(site, varying)
            return
        rnn = self._rnn_dropout(module, site.builder)
        if rnn is not None:
            self._mark_rnn_dropout(site, rnn)
            return
        if site.fsdp is not None:
            orig = keyword(site.fsdp, "use_orig_params")
            if orig is not None and not (isinstance(orig.value, cst.Name) and orig.value.value == "True"):
                self.mark(site.anchor, "not compiled: FSDP1 is traced by Dynamo only with use_orig_params=True; set it, then compile after the wrap", code="NRN413")
                return
            if orig is None:
                self.replace(
                    site.fsdp,
                    lambda n: add_keyword_keep_layout(n, "use_orig_params", cst.Name("True")),  # type: ignore[arg-type]
                    "FSDP(use_orig_params=True): Dynamo compiles FSDP1 only with the original parameters",
                )
        arguments = self._arguments(module, site)
        wrapped = site.fsdp is not None or self._sharded(site)  # FSDP's hooks break the graph at each unit
        fullgraph = "fullgraph=True" in arguments
        text = f"{site.name}.compile({', '.join(arguments)})"
        new = [*self._rnn_switch(module, site.builder), cst.parse_statement(text + "\n")]
        why = (
            "fullgraph=True: the forward of the file's model class (and the helpers it calls) has no .item()/.tolist(), "
            "data-dependent op, value-reading test or print"
            if fullgraph
            else "fullgraph left off: forward not in view or has hazards"
        )
        if wrapped:
            why = "placed after the FSDP wrap, which Dynamo traces; fullgraph left off (FSDP units break the graph)"
        message = f"{text} inserted (in-place compile keeps state_dict keys; {why})"
        if len(new) > 1:
            message += "; torch._dynamo.config.allow_rnn = True before it: Dynamo skips nn.LSTM/GRU/RNN forwards otherwise"
        if site.before:
            self.insert_before(site.anchor, new, message)
        else:
            self.insert_after(site.anchor, new, message)

    def _arms(self, site: _Site) -> list[Sequence[cst.BaseStatement]] | None:
        """The bodies of an ``if``/``elif``/``else`` anchor when every arm builds the model (each
        arm is then a model of its own; its compile goes at the end of the arm)."""
        if site.before or site.fsdp is not None or not isinstance(site.anchor, cst.If):
            return None
        arms: list[Sequence[cst.BaseStatement]] = []
        branch: cst.If | cst.Else | None = site.anchor
        while branch is not None:
            body = branch.body.body
            if not isinstance(body, (list, tuple)) or self._builder(body, site.name) is None:
                return None
            arms.append(body)
            branch = branch.orelse if isinstance(branch, cst.If) else None
        return arms if len(arms) > 1 and isinstance(self._last_branch(site.anchor), cst.Else) else None

    @staticmethod
    def _last_branch(node: cst.If) -> cst.If | cst.Else:
        while isinstance(node.orelse, cst.If):
            node = node.orelse
        return node.orelse if node.orelse is not None else node

    def _arguments(self, module: cst.Module, site: _Site) -> list[str]:
        arguments = [] if self.options.style == "accelerator" else ['backend="neuron"']
        arguments.append("dynamic=False")
        wrapped = site.fsdp is not None or self._sharded(site)
        if not wrapped and site.builder is not None and _clean_model(module, site.builder, self.qualified):
            arguments.append("fullgraph=True")
        return arguments

    def _rnn_switch(self, module: cst.Module, builder: cst.BaseExpression | None) -> list[cst.BaseStatement]:
        """``torch._dynamo.config.allow_rnn = True`` when the model class of this file builds a
        recurrent torch module (``nn.LSTM``, or ``getattr(nn, rnn_type)``): with the default False,
        Dynamo runs the whole frame eagerly (measured on torch 2.13: zero graphs) and nothing is compiled."""
        sets_it = any(
            isinstance(node, cst.Attribute) and node.attr.value == "allow_rnn" for node in child_index(self).find(module, cst.Attribute)
        )
        if sets_it or not self._recurrent(module, builder):
            return []  # the script sets it itself
        return [cst.parse_statement("torch._dynamo.config.allow_rnn = True\n")]

    def _recurrent(self, module: cst.Module, builder: cst.BaseExpression | None) -> list[cst.Call]:
        """The recurrent torch modules the model class (and the classes it uses) builds."""
        if builder is None or not isinstance(builder, cst.Call) or not isinstance(builder.func, cst.Name):
            return []
        classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
        root = classes.get(builder.func.value)
        if root is None:
            return []
        found: list[cst.Call] = []
        for cls in _reachable_classes(root, classes):
            for c in cast("list[cst.Call]", m.findall(cls, m.Call())):
                inner = c.func
                by_name = isinstance(inner, cst.Call) and dotted(inner.func) == "getattr" and bool(inner.args)
                if not self.qualified(c.func).isdisjoint(_RNN_MODULES) or (
                    by_name and isinstance(inner, cst.Call) and "torch.nn" in self.qualified(inner.args[0].value)
                ):
                    found.append(c)
        return found

    def _rnn_dropout(self, module: cst.Module, builder: cst.BaseExpression | None) -> str | None:
        """A recurrent module with dropout between its layers (``nn.LSTM(..., num_layers, dropout=p)``,
        p not a literal 0, more than one layer): compiled, torch 2.13 never applies that dropout
        (torch/_decomp/decompositions.py ``_rnn_helper`` sets it to 0.0 through an always-false
        ``num_layers < i - 1``; measured: the compiled loss equals the eager loss of dropout=0), so
        the compiled model would train without the regularisation the script asks for."""
        for call in self._recurrent(module, builder):
            dropout = keyword(call, "dropout") or positional(call, 5)
            layers = keyword(call, "num_layers") or positional(call, 2)
            zero = dropout is None or (isinstance(dropout.value, (cst.Integer, cst.Float)) and float(dropout.value.value) == 0.0)
            single = layers is None or (isinstance(layers.value, cst.Integer) and layers.value.value == "1")
            if not zero and not single:
                return self.context.module.code_for_node(call).strip()
        return None

    def _mark_rnn_dropout(self, site: _Site, call: str) -> None:
        shown = " ".join(call.split())
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        self.mark(
            site.builder if site.builder is not None else site.anchor,
            f"not compiled: `{shown}` has dropout between its layers, which a compiled RNN skips (torch 2.13's "
            "RNN decomposition never applies it): compiled, the model would train differently; compile it "
            "(torch._dynamo.config.allow_rnn = True, then compile) once that dropout is 0 or one layer, or keep it eager",
            code="NRN413",
        )


    def _sharded(self, site: _Site) -> bool:
        calls = [c for c in m.findall(site.anchor, m.Call()) if isinstance(c, cst.Call)]
        return any(self.matches(c.func, *_SHARDERS) for c in calls)

    def _torch_native(self, builder: cst.BaseExpression) -> bool:
        """The model is an instance of a torch.nn class itself (``nn.Sequential(...)``, ``nn.Linear``)."""
        if not isinstance(builder, cst.Call):
            return False
        return any(name.startswith("torch.nn.") for name in self.qualified(builder.func))


# --------------------------------------------------------------------- tree helpers (no metadata)
def _class_of(rule: Rule, method: cst.FunctionDef) -> cst.ClassDef | None:
    block = rule.parent(method)
    owner = rule.parent(block) if block is not None else None
    return owner if isinstance(owner, cst.ClassDef) else None


def _stored_attributes(statement: cst.BaseStatement, name: str) -> list[str]:
    """``model`` stored on ``self``: ``self.model = model`` / ``self.model = model.to(device)``."""
    found: list[str] = []
    for a in cast("list[cst.Assign]", m.findall(statement, m.Assign())):
        if _root_name(a.value) != name:
            continue
        for t in a.targets:
            found.extend(b[len("self."):] for b in _bound_names(t.target) if b.startswith("self."))
    return found


_MODULE_METHODS = frozenset({"to", "cuda", "parameters", "named_parameters", "train", "eval", "state_dict", "load_state_dict", "zero_grad", "modules"})


def _used_as_module(rule: Rule, function: cst.FunctionDef | None, name: str) -> bool:
    """``name.to(device)`` / ``name.parameters()`` in the function: the value is an nn.Module."""
    if function is None:
        return False
    return any(
        isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in _MODULE_METHODS
        and isinstance(n.func.value, cst.Name) and n.func.value.value == name
        for n in child_index(rule).walk(function.body)
    )


def _root_name(node: cst.BaseExpression) -> str | None:
    """``model`` for ``model``, ``model.module`` (DDP's inner module) and ``model.to(dev)``;
    ``self.model`` for an attribute of ``self``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and node.attr.value == "module":
        return _root_name(node.value)
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return f"self.{node.attr.value}"
    if isinstance(node, cst.Call) and method_name(node) in _PLACEMENT and isinstance(node.func, cst.Attribute):
        return _root_name(node.func.value)
    return None


def _parameters_owner(node: cst.CSTNode) -> str | None:
    for found in m.findall(node, m.Call(func=m.Attribute(attr=m.Name("parameters") | m.Name("named_parameters")))):
        assert isinstance(found, cst.Call) and isinstance(found.func, cst.Attribute)
        name = _root_name(found.func.value) or _owner_of_part(found.func.value)
        if name is not None and name != "self":
            return name
    return None


def _owner_of_part(node: cst.BaseExpression) -> str | None:
    """``model`` for ``model.fc`` / ``model.backbone.head``: training a part (a head on a frozen
    backbone) still runs the whole model's forward, so the whole model is what to compile."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) and node.value != "self" else None


def _bound_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        yield f"self.{target.attr.value}"
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _bound_names(element.value)


def _binds_any(statement: cst.CSTNode, names: set[str]) -> bool:
    for node in cast("Sequence[cst.Assign | cst.AnnAssign]", m.findall(statement, m.Assign() | m.AnnAssign())):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        if any(bound in names for target in targets for bound in _bound_names(target)):
            return True
    return False


# Reads of a model that neither build, load nor place it: not an insertion anchor.
_READS = frozenset(
    {"parameters", "named_parameters", "state_dict", "modules", "named_modules", "children", "named_children", "buffers", "named_buffers"}
)
_INERT_FUNCTIONS = frozenset({"print", "len", "str", "repr", "type", "isinstance", "sum", "id"})


def _mentions(statement: cst.CSTNode, name: str) -> bool:
    """Whether ``statement`` builds, loads or places ``name`` (binds it, calls a method on it other
    than a read such as ``.parameters()``, or passes it to a function other than ``print``/``len``)."""
    if _binds_any(statement, {name}):
        return True
    for target in m.findall(statement, m.AssignTarget(target=m.Attribute())):
        assert isinstance(target, cst.AssignTarget)
        if _owner_of_part(target.target) == name and not name.startswith("self."):  # type: ignore[arg-type]
            return True  # model.fc = nn.Linear(...): the model is still being built
    for call in m.findall(statement, m.Call()):
        assert isinstance(call, cst.Call)
        if isinstance(call.func, cst.Attribute) and _root_name(call.func.value) == name:
            if call.func.attr.value not in _READS:
                return True
        elif dotted(call.func) not in _INERT_FUNCTIONS and any(dotted(arg.value) == name for arg in call.args):
            return True
    return False


def _clean_model(module: cst.Module, builder: cst.BaseExpression, qualify: Qualify) -> bool:
    """Whether the model class is defined in this file and its forward shows no compile hazard."""
    if not isinstance(builder, cst.Call) or not isinstance(builder.func, cst.Name):
        return False
    classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
    functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    root = classes.get(builder.func.value)
    if root is None or not _method(root, "forward"):
        return False
    seen_classes = _reachable_classes(root, classes)
    # torch's Transformer modules held by these classes: given a mask without its causal hint, they
    # test it on the host (rules/_lib/causal_masks.py), which fullgraph=True cannot trace.
    transformers = {name: kind for cls in seen_classes for name, kind in constructors_in(cls, qualify).items()
                    if name.startswith("self.")}
    todo: list[cst.FunctionDef] = []
    for cls in seen_classes:
        todo.extend(f for f in (_method(cls, "forward"),) if f is not None)
    checked: set[int] = set()
    while todo:
        function = todo.pop()
        if id(function) in checked:
            continue
        checked.add(id(function))
        if _hazardous(function, qualify):
            return False
        for call in m.findall(function, m.Call()):
            assert isinstance(call, cst.Call)
            kind = module_kind(call, transformers)
            if kind is not None and unhinted_masks(call, kind):
                return False
            if isinstance(call.func, cst.Name) and call.func.value in functions:
                todo.append(functions[call.func.value])
            elif isinstance(call.func, cst.Attribute) and dotted(call.func.value) == "self":
                for cls in seen_classes:
                    method = _method(cls, call.func.attr.value)
                    if method is not None:
                        todo.append(method)
    return True


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    return next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _reachable_classes(root: cst.ClassDef, classes: dict[str, cst.ClassDef]) -> list[cst.ClassDef]:
    found = [root]
    index = 0
    while index < len(found):
        for name in m.findall(found[index], m.Name()):
            assert isinstance(name, cst.Name)
            cls = classes.get(name.value)
            if cls is not None and cls not in found:
                found.append(cls)
        index += 1
    return found


def _hazardous(function: cst.FunctionDef, qualify: Qualify) -> bool:
    for call in m.findall(function, m.Call()):
        assert isinstance(call, cst.Call)
        if method_name(call) in _HAZARD_METHODS or _LOGGING.match(dotted(call.func) or ""):
            return True
        if not qualify(call.func).isdisjoint(_HAZARD_FUNCTIONS):
            return True
    for subscript in m.findall(function, m.Subscript()):
        assert isinstance(subscript, cst.Subscript)
        for element in subscript.slice:
            if isinstance(element.slice, cst.Index) and _mask_like(element.slice.value):
                return True
    found = m.findall(function, m.If() | m.While() | m.IfExp() | m.Assert())
    tests = [n.test for n in cast("Sequence[cst.If | cst.While | cst.IfExp | cst.Assert]", found)]
    return any(_reads_values(test, qualify) for test in tests)


def _mask_like(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Comparison):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return True
    text = dotted(node)
    return text is not None and "mask" in text.split(".")[-1].lower()


def _reads_values(test: cst.BaseExpression, qualify: Qualify) -> bool:
    for call in m.findall(test, m.Call()):
        assert isinstance(call, cst.Call)
        if method_name(call) in _VALUE_METHODS:
            return True
        if any(name.startswith("torch.") and name not in _STATIC_TORCH for name in qualify(call.func)):
            return True
    return False


def _update_step_losses(rule: Rule, module: cst.Module) -> set[str]:
    """The torchrl loss modules whose training step NRN415 (compile_update) compiles as one function."""
    from porter.rules.compile_update import update_steps  # that module borrows this one's exclusions

    return {step.loss for step in update_steps(rule, module)}
