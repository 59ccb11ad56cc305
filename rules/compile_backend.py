"""NRN401-NRN403: existing ``torch.compile`` calls, decorators and ``model.compile`` → the neuron backend."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import ClassVar

import libcst as cst
from libcst.metadata import QualifiedNameProvider, QualifiedNameSource, ScopeProvider

from porter.engine.astcheck import SourceFacts
from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import drop_keyword, keyword, make_arg, set_keyword_keep_layout, with_args
from porter.rules._lib.nodes import dotted, string_value, with_string_value
from porter.rules._lib.tree import child_index, name_bindings
from porter.rules._tables.compile import COMPILE_FORWARDERS, COMPILE_KEYWORDS, CUDA_BACKENDS, DEBUG_BACKENDS, cuda_only_option

_COMPILE = "torch.compile"
_INDUCTOR_CONFIG = "torch._inductor.config"
# Names of settings that choose a compile backend (not a distributed backend: their values differ).
_FORWARDER_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in COMPILE_FORWARDERS)
_BACKEND_SETTING = re.compile(r"(?i)^(torch_?compile|(torch_?)?compile_backend|dynamo_backend|backend)$")


# What only a torch module is asked for: a receiver read with one of these is taken as nn.Module.
_MODULE_METHODS = frozenset({"parameters", "named_parameters", "buffers", "modules", "children", "state_dict",
                             "load_state_dict", "train", "eval", "to", "cuda", "cpu", "half", "float", "bfloat16",
                             "forward", "zero_grad", "requires_grad_", "apply", "register_forward_hook"})

class CompileBackend(Rule):
    """Port existing ``torch.compile`` uses to TorchNeuron's ``neuron`` backend.

    What it does:
        On every ``torch.compile(...)`` call, ``@torch.compile`` / ``@torch.compile(...)``
        decorator and ``model.compile(...)`` call: sets ``backend="neuron"`` (replacing Inductor
        and other CUDA backends; an absent backend is added), sets ``dynamic=False``, drops
        ``mode=``, and drops Inductor/Triton/CUDA-graph keys from a literal ``options`` dict (the
        dict goes if it ends up empty). ``fullgraph=`` and every other argument are kept. NRN402
        removes ``torch._inductor.config.X = ...`` assignments (any import spelling), except in a
        branch of a test that names a backend (``if cfg.backend == "inductor":``): that setting
        belongs to the path the user's backend choice takes, and a Neuron run never enters it. With
        ``--style accelerator`` no backend is written, a CUDA backend (``"inductor"``) is
        dropped and ``mode=`` is kept (TorchNeuron ignores it with a warning; on a CUDA host it
        still chooses CUDA graphs or autotuning), so the code stays device-generic. Settings of the tool that choose a compile
        backend get ``"neuron"`` for a CUDA backend (review): an argparse flag named like
        ``--torchcompile``/``--compile-backend``/``--dynamo-backend``/``--backend`` with ``const=`` or
        ``default="inductor"`` (timm's ``--torchcompile``), and a ``backend``/``compile_backend``
        field or variable assigned ``"inductor"`` (a config dataclass). Every ``torch.compile`` call
        of the file, a second one for an EMA or teacher model included, gets ``dynamic=False``.
        Helpers of other libraries that pass their arguments on to ``torch.compile`` (torchrl's
        ``compile_with_warmup``; the table ``COMPILE_FORWARDERS`` names each with its source) are
        ported the same way, matched by qualified name; their own keywords (``warmup=``) are kept.

    Why:
        TorchNeuron compiles through Dynamo → AOTAutograd → StableHLO → neuronx-cc, not through
        Inductor (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)). The docs say to pass ``backend="neuron"`` and remove CUDA-specific
        parameters such as ``mode="max-autotune-no-cudagraphs"`` (AWS Neuron docs, TorchNeuron overview (torch/index); AWS Neuron docs, torch.compile reference (torch/compile/reference-torch-compile)): ``mode`` only logs
        a warning, ``dynamic=True`` is rejected, and left unset Dynamo turns sizes symbolic after the
        second shape it sees (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)). Inductor config and options keys have no effect on Neuron.
        Accelerator style: the reference says the backend is "auto-selected when running on a Neuron
        device" (AWS Neuron docs, torch.compile reference (torch/compile/reference-torch-compile), docs only — not seen in the source snapshot: unverified), so device-generic
        code leaves it unset.

    Before:
        torch._inductor.config.coordinate_descent_tuning = True
        model = torch.compile(model, mode="max-autotune", options={"triton.cudagraphs": True})
        @torch.compile
        def step(x): ...

    After:
        model = torch.compile(model, backend="neuron", dynamic=False)
        @torch.compile(backend="neuron", dynamic=False)
        def step(x): ...

    Safety:
        Safe: ``mode`` and Inductor settings are ignored by TorchNeuron, and ``dynamic=False`` is the
        only value it accepts. Debug backends (``"eager"``, ``"aot_eager"``) are left as chosen.
        A backend or ``options`` that is not a literal (``backend=args.backend``) is kept with an
        NRN403 review marker; so is a ``dynamic=`` taken from the script's own option
        (``dynamic=self.compile_using_dynamic_shape_tracing``): an explicit choice is not
        overwritten, the marker says to set it to False. ``model.compile(...)`` has no qualified name: any ``X.compile(...)``
        whose receiver is not an imported module (so not ``re.compile``) and whose arguments are
        all ``torch.compile`` keywords (so not Keras' ``model.compile(optimizer=..., loss=...)``) is
        taken as ``nn.Module.compile``, except a bare ``X.compile()`` whose ``X`` is a name bound only
        to calls of things imported from outside torch and never used as a module in its scope (no
        ``.parameters()``/``.to()``/``.train()``-like read, never called): another library's compiler
        (``runner = ClientRunner(...)``; ``runner.compile()``) is left alone. A user class with its
        own such ``compile`` method would be rewritten too (known miss). ``torch._dynamo.optimize(...)`` (legacy) is not ported.
    """

    code: ClassVar[str] = "NRN401"
    name: ClassVar[str] = "compile-backend"
    summary: ClassVar[str] = 'torch.compile / model.compile -> backend="neuron", dynamic=False; drop mode and Inductor options'
    safety: ClassVar[Safety] = Safety.SAFE
    # torch.compile / X.compile, torch._inductor.config, and the backend names a setting is ported from.
    triggers: ClassVar[tuple[str, ...]] = ("compile", *sorted(CUDA_BACKENDS))
    trigger_pattern: ClassVar[str] = "|".join([r"\bcompile\b", *sorted({n.rsplit(".", 1)[-1] for n in COMPILE_FORWARDERS}), *sorted(CUDA_BACKENDS)])
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN402": "torch._inductor.config assignment removed (TorchNeuron does not use Inductor)",
        "NRN403": "torch.compile backend/options not a literal: review marker",
    }
    safe_extra_codes: ClassVar[frozenset[str]] = frozenset({"NRN402"})
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 60

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """Every edit is one of: a decorator or call whose qualified name is ``torch.compile``
        (``torch`` imported and then ``.compile``: an attribute ``compile`` on a name an import
        binds to ``torch``; a name an import binds to ``torch.compile``) or a COMPILE_FORWARDERS
        name (its last part an identifier); ``X.compile(...)`` with torch.compile keywords only
        (``_module_compile``); a ``torch._inductor.config`` target (every part an identifier); a
        backend setting whose value is a CUDA_BACKENDS string (``_backend_value``: ``string_value``,
        so one ``str`` constant of that value)."""
        if facts.strings & CUDA_BACKENDS or facts.spells(_INDUCTOR_CONFIG) or facts.identifiers & _FORWARDER_NAMES:
            return True
        if "compile" not in facts.identifiers:
            return False
        for node in facts.of(ast.Attribute):
            if node.attr == "compile" and isinstance(node.value, ast.Name) and "torch" in facts.imported.get(node.value.id, ()):
                return True
        if any("torch.compile" in bound for bound in facts.imported.values()):
            return True
        return any(
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "compile"
            and not call.args
            and all(item.arg in COMPILE_KEYWORDS for item in call.keywords)
            for call in facts.of(ast.Call)
        )

    # ----------------------------------------------------------------- torch.compile
    def visit_Decorator(self, node: cst.Decorator) -> None:
        expr = node.decorator
        if isinstance(expr, (cst.Name, cst.Attribute)) and self.matches(expr, _COMPILE):
            neuron = self.options.style != "accelerator"

            def transform(updated: cst.CSTNode) -> cst.CSTNode:
                assert isinstance(updated, cst.BaseExpression)
                args = [make_arg("backend", cst.SimpleString('"neuron"'))] if neuron else []
                args.append(make_arg("dynamic", cst.Name("False")))
                return with_args(cst.Call(func=updated), args)

            self.replace(expr, transform, self._message(["backend", "dynamic"] if neuron else ["dynamic"]))

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, _COMPILE, *COMPILE_FORWARDERS) or self._module_compile(node):
            self._port_call(node)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument":
            self._backend_flag(node)

    # ----------------------------------------------------------------- backend settings of the tool
    def _backend_flag(self, call: cst.Call) -> None:
        """``--torchcompile`` (timm: ``nargs="?", const="inductor"``) / ``--compile-backend
        default="inductor"``: the value the flag gives when no backend is named on the command line."""
        flags = [string_value(a.value) or "" for a in call.args if a.keyword is None]
        if not any(_BACKEND_SETTING.search(flag.lstrip("-").replace("-", "_")) for flag in flags):
            return
        for name in ("const", "default"):
            arg = keyword(call, name)
            if arg is not None:
                self._backend_value(arg.value, f"{flags[0] if flags else 'flag'} {name}")

    def _backend_value(self, value: cst.BaseExpression, where: str) -> None:
        if self.options.style == "accelerator" or string_value(value) not in CUDA_BACKENDS:
            return
        old = string_value(value)
        self.replace(
            value,
            lambda n: with_string_value(n, "neuron"),  # type: ignore[arg-type]
            f'{where} "{old}" -> "neuron" (the backend this setting gives torch.compile; {old} does not run on Neuron)',
            safety=Safety.REVIEW,
        )

    def _backend_field(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """``backend: str = "inductor"`` in a config class, ``compile_backend = "inductor"``."""
        text = dotted(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
        if value is not None and text and _BACKEND_SETTING.search(text.split(".")[-1]):
            self._backend_value(value, text)

    def _module_compile(self, call: cst.Call) -> bool:
        """``X.compile(...)`` that looks like ``nn.Module.compile`` (see Safety)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "compile":
            return False
        if any(arg.keyword is None or arg.keyword.value not in COMPILE_KEYWORDS for arg in call.args):
            return False
        return not self._imported(func.value) and not (not call.args and self._library_object(func.value))

    def _library_object(self, receiver: cst.BaseExpression) -> bool:
        """``runner.compile()`` where ``runner = ClientRunner(...)``: a name every binding of which is
        a call of something imported from outside torch, and that its scope never uses as a module
        (no ``.parameters()``, ``.to(...)``, ``.train()``, ... on it, never called): another
        library's own ``compile`` (Hailo's compiler), not ``nn.Module.compile``."""
        if not isinstance(receiver, cst.Name):
            return False
        values = name_bindings(self, receiver)
        if not values:
            return False
        for value in values:
            if not isinstance(value, cst.Call):
                return False
            callee = self.get_metadata(QualifiedNameProvider, value.func, set())
            if not callee or any(n.source is not QualifiedNameSource.IMPORT or n.name.split(".")[0] == "torch"
                                 for n in callee):
                return False
        scope = self.get_metadata(ScopeProvider, receiver, None)
        for access in scope.accesses[receiver.value] if scope is not None else ():
            parent = self.parent(access.node)
            if isinstance(parent, cst.Call) and parent.func is access.node:
                return False
            if isinstance(parent, cst.Attribute) and parent.attr.value in _MODULE_METHODS:
                return False
        return True

    def _imported(self, node: cst.BaseExpression) -> bool:
        root: cst.BaseExpression = node
        while isinstance(root, cst.Attribute):
            root = root.value
        names = self.get_metadata(QualifiedNameProvider, root, set())
        return any(name.source is QualifiedNameSource.IMPORT for name in names)

    def _port_call(self, call: cst.Call) -> None:
        if any(arg.star for arg in call.args):
            self.mark(call, "torch.compile with **kwargs: set backend='neuron', dynamic=False by hand", code="NRN403")
            return
        backend = keyword(call, "backend")
        notes = []  # one NRN403 marker per call, whatever it says
        if backend is not None and string_value(backend.value) is None:
            notes.append("backend is not a literal: use backend='neuron' on Trainium")
        options = keyword(call, "options")
        if options is not None and not isinstance(options.value, cst.Dict):
            notes.append("options not a literal: drop Inductor/Triton/CUDA-graph keys")
        # dynamic= from the script's own option (speechbrain's compile_using_dynamic_shape_tracing)
        # is kept as given: only literals (defaults, hard-coded values) are rewritten.
        dynamic = keyword(call, "dynamic")
        kept = frozenset({"dynamic"}) if dynamic is not None and _user_value(dynamic.value) else frozenset()
        if dynamic is not None and kept:
            text = self.context.module.code_for_node(dynamic.value)
            notes.append(f"dynamic={text} is the script's own option, kept: TorchNeuron accepts only dynamic=False, so set it to False on Trainium")
        if notes:
            self.mark(call, "torch.compile " + "; ".join(notes), code="NRN403")
        if backend is not None and string_value(backend.value) in DEBUG_BACKENDS:
            return
        port = self._porter(kept)
        ported = port(call)
        if ported.deep_equals(call):
            return
        changed = [name for name in ("backend", "dynamic", "mode", "options") if _differs(call, ported, name)]
        self.replace(call, lambda n: port(n) if isinstance(n, cst.Call) else n, self._message(changed))

    def _porter(self, kept: frozenset[str] = frozenset()) -> Callable[[cst.Call], cst.Call]:
        neuron = self.options.style != "accelerator"

        def port(call: cst.Call) -> cst.Call:
            backend = keyword(call, "backend")
            value = string_value(backend.value) if backend is not None else None
            if neuron and (backend is None or value in CUDA_BACKENDS):
                call = set_keyword_keep_layout(call, "backend", cst.SimpleString('"neuron"'))
            elif not neuron and value in CUDA_BACKENDS:
                call = drop_keyword(call, "backend")
            dynamic = keyword(call, "dynamic")
            if "dynamic" not in kept and (dynamic is None or not (isinstance(dynamic.value, cst.Name) and dynamic.value.value == "False")):
                call = set_keyword_keep_layout(call, "dynamic", cst.Name("False"))
            if neuron:  # device-generic code keeps it: mode= still chooses CUDA graphs on a CUDA host
                call = drop_keyword(call, "mode")
            return _drop_cuda_options(call)

        return port

    def _message(self, changed: list[str]) -> str:
        parts = {
            "backend": 'backend="neuron"'
            if self.options.style != "accelerator"
            else "CUDA backend dropped (auto-selected on a Neuron device)",
            "dynamic": "dynamic=False",
            "mode": "mode dropped (ignored by TorchNeuron)",
            "options": "Inductor/CUDA-graph options dropped",
        }
        return "torch.compile: " + ", ".join(parts[name] for name in changed)

    # ----------------------------------------------------------------- torch._inductor.config
    def visit_Assign(self, node: cst.Assign) -> None:
        if any(self._inductor_target(target.target) for target in node.targets):
            self._remove_config(node)
        elif len(node.targets) == 1:
            self._backend_field(node.targets[0].target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._inductor_target(node.target):
            self._remove_config(node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._inductor_target(node.target):
            self._remove_config(node)
        else:
            self._backend_field(node.target, node.value)

    def _inductor_target(self, target: cst.BaseExpression) -> bool:
        if not isinstance(target, cst.Attribute):
            return False
        return self.matches_prefix(target, _INDUCTOR_CONFIG + ".") is not None

    def _remove_config(self, small: cst.BaseSmallStatement) -> None:
        line = self.parent(small)
        message = "torch._inductor.config setting removed (TorchNeuron does not use Inductor)"
        if not isinstance(line, cst.SimpleStatementLine) or self._chosen_backend_branch(line):
            return
        if len(line.body) > 1:
            self.replace(small, lambda _n: cst.RemoveFromParent(), message, code="NRN402")
        else:  # the engine keeps an emptied block valid (and drops an `if` left around nothing)
            self.remove_statement(line, message, code="NRN402")
        self._drop_config_imports()

    def _chosen_backend_branch(self, line: cst.CSTNode) -> bool:
        """The setting sits in a branch of a test that names a backend (``if backend == "inductor":``,
        ``elif cfg.backend == "aot_eager":``): it configures the path the user's backend choice takes,
        and runs only there; a Neuron run takes another branch."""
        for ancestor in self.ancestors(line):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
            if isinstance(ancestor, cst.If) and any(
                isinstance(node, cst.Comparison)
                and any(string_value(part) in CUDA_BACKENDS | DEBUG_BACKENDS
                        for part in [node.left, *(c.comparator for c in node.comparisons)])
                for node in child_index(self).walk(ancestor.test)
            ):
                return True
        return False

    def _drop_config_imports(self) -> None:
        self.drop_import_if_unused(ImportSpec("torch._inductor", "config"), code="NRN402")
        self.drop_import_if_unused(ImportSpec("torch._inductor", "config", "inductor_config"), code="NRN402")
        self.drop_import_if_unused(ImportSpec("torch._inductor.config"), code="NRN402")
        self.drop_import_if_unused(ImportSpec("torch._inductor.config", None, "inductor_config"), code="NRN402")


def _user_value(value: cst.BaseExpression) -> bool:
    """Not a literal (``True``/``False``/``None``, a string): the script's own setting."""
    literal = (isinstance(value, cst.Name) and value.value in {"True", "False", "None"}) or string_value(value) is not None
    return not literal


def _differs(old: cst.Call, new: cst.Call, name: str) -> bool:
    before, after = keyword(old, name), keyword(new, name)
    if before is None or after is None:
        return (before is None) != (after is None)
    return not before.value.deep_equals(after.value)


def _drop_cuda_options(call: cst.Call) -> cst.Call:
    options = keyword(call, "options")
    if options is None or not isinstance(options.value, cst.Dict):
        return call
    elements = list(options.value.elements)
    kept = [
        element
        for element in elements
        if not (isinstance(element, cst.DictElement) and _cuda_key(element.key))
    ]
    if len(kept) == len(elements):
        return call
    if not kept:
        return drop_keyword(call, "options")
    if isinstance(kept[-1].comma, cst.Comma) and not isinstance(elements[-1].comma, cst.Comma):
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return set_keyword_keep_layout(call, "options", options.value.with_changes(elements=kept))


def _cuda_key(key: cst.BaseExpression) -> bool:
    value = string_value(key)
    return value is not None and cuda_only_option(value)
