"""NRN108: ``torch.cuda.OutOfMemoryError`` becomes a test that also catches a Neuron allocation failure."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.device import torch_ref
from porter.rules._lib.nodes import dotted, string_value

_NAME = "torch.cuda.OutOfMemoryError"
# What TorchNeuron's allocator raises: a plain RuntimeError with one of these in its message
# (torch-neuronx source, torch_neuronx/neuron.py: [R: allocator sources], the message seen in transformers PR #47029).
_NEURON_MESSAGES = ("NRT allocation failed", "OOM")
_MARKER = (
    "TorchNeuron raises RuntimeError('... NRT allocation failed / OOM ...'), not OutOfMemoryError, "
    "on an allocation failure: check the handler still does the right thing"
)


def _neuron_oom_test(name: str) -> str:
    """Source of the test "``name`` is a Neuron allocation failure"."""
    return " or ".join(f'"{text}" in str({name})' for text in _NEURON_MESSAGES)


class CudaOutOfMemory(Rule):
    """Port ``torch.cuda.OutOfMemoryError`` to a test that also catches Neuron's allocation failure.

    What it does:
        ``except torch.cuda.OutOfMemoryError [as e]:`` becomes ``except (torch.OutOfMemoryError,
        RuntimeError) as e:`` whose body first re-raises what is neither (``if not isinstance(e,
        torch.OutOfMemoryError) and not ("NRT allocation failed" in str(e) or "OOM" in str(e)):
        raise``); a handler without a name gets ``as oom_error``. ``isinstance(e,
        torch.cuda.OutOfMemoryError)`` becomes ``(isinstance(e, torch.OutOfMemoryError) or
        isinstance(e, RuntimeError) and (...message test...))``. Every other reference (a tuple of
        exception types, ``raise``, a handler followed by other handlers — a ``raise`` in it would
        skip them) becomes ``torch.OutOfMemoryError``, with the marker. The file's spelling is kept
        (``th.cuda.OutOfMemoryError`` -> ``th.OutOfMemoryError``; ``from torch.cuda import
        OutOfMemoryError`` -> ``torch.OutOfMemoryError``, the import dropped once unused). Each
        change carries a review marker. Same output in both styles.

    Why:
        ``torch.cuda.OutOfMemoryError`` is an alias of the device-generic ``torch.OutOfMemoryError``
        (torch >= 2.5), but TorchNeuron's allocator does not raise it: an allocation failure is a
        plain ``RuntimeError`` whose message contains "NRT allocation failed" / "OOM" (torch-neuronx source, torch_neuronx/neuron.py).
        An OOM back-off loop (halve the batch, retry) ported by name alone would never catch it
        on Trainium and crash instead.

    Before:
        try:
            loss = step(batch)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()

    After:
        # porter: NRN108 TorchNeuron raises RuntimeError('... NRT allocation failed / OOM ...') ...
        try:
            loss = step(batch)
        except (torch.OutOfMemoryError, RuntimeError) as oom_error:
            if not isinstance(oom_error, torch.OutOfMemoryError) and not ("NRT allocation failed" in str(oom_error) or "OOM" in str(oom_error)):
                raise
            torch.cuda.empty_cache()  # ported by NRN103

    Safety:
        Review: the Neuron message text comes from the allocator sources of a pre-release
        snapshot and one transformers PR, not from a documented contract; a later release may
        word it differently (then the handler re-raises, as the unported one would). Name
        heuristic: the exception class is matched by qualified name (any import spelling); a
        ``RuntimeError`` matched on the CUDA text is recognised only in the form ``"...out of
        memory..." in str(name)`` or ``in str(name).lower()`` (Neuron's texts are then tested in
        ``str(name)`` as written: "oom" in a lowered message would also match "room"; ``e.args[0]``,
        regexes are missed); an already generic
        ``torch.OutOfMemoryError`` in a file that does not mention CUDA is left alone.
    """

    code: ClassVar[str] = "NRN108"
    name: ClassVar[str] = "cuda-oom"
    summary: ClassVar[str] = "torch.cuda.OutOfMemoryError -> also catch Neuron's RuntimeError allocation failure"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("OutOfMemoryError", "out of memory")
    order: ClassVar[int] = 20

    _mentions_device: bool | None = None  # per file (the rule is instantiated once per file)

    def _on_cuda_or_neuron(self) -> bool:
        if self._mentions_device is None:
            lowered = self.context.text.lower()
            self._mentions_device = any(word in lowered for word in ("cuda", "neuron"))
        return self._mentions_device

    def visit_Comparison(self, node: cst.Comparison) -> None:
        """``"out of memory" in str(e)`` (the CUDA allocator's text) in a CUDA file: also Neuron's."""
        # A file on CUDA or already on Neuron (a rule before this one ported its .cuda() calls).
        if len(node.comparisons) != 1 or not self._on_cuda_or_neuron():
            return
        operator = node.comparisons[0].operator
        text = string_value(node.left)
        if not isinstance(operator, (cst.In, cst.NotIn)) or text is None or "out of memory" not in text.lower():
            return
        haystack = node.comparisons[0].comparator
        if isinstance(haystack, cst.Call) and isinstance(haystack.func, cst.Attribute) and haystack.func.attr.value in ("lower", "casefold") and not haystack.args:
            haystack = haystack.func.value  # str(e).lower(): Neuron's texts are tested in str(e) as written
        if not (isinstance(haystack, cst.Call) and dotted(haystack.func) == "str" and len(haystack.args) == 1):
            return
        subject = dotted(haystack.args[0].value)
        if subject is None or self._already_neuron(node):
            return
        negated = isinstance(operator, cst.NotIn)
        extra = [f'"{needle}" {"not in" if negated else "in"} str({subject})' for needle in _NEURON_MESSAGES]
        joiner = " and " if negated else " or "

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Comparison)
            first = cst.Module([]).code_for_node(updated.with_changes(lpar=[], rpar=[]))
            return cst.parse_expression("(" + joiner.join([first, *extra]) + ")")

        self.replace(node, transform, 'OOM message test "out of memory" -> also Neuron\'s "NRT allocation failed"/"OOM"')
        self.mark(node, _MARKER)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._consider(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._consider(node)

    def _consider(self, node: cst.Attribute | cst.Name) -> None:
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node):
            return  # only the whole dotted chain
        # The name first: the ancestor walk for every name was the rule's main cost on big files.
        if not self.matches(node, _NAME):
            return
        if any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in self.ancestors(node)):
            return
        generic, imports = self._generic_name(node)
        self._drop_old_import(node)
        if isinstance(parent, cst.ExceptHandler) and parent.type is node and self._last_handler(parent):
            self._handler(parent, generic, imports)
        elif self._isinstance_call(node) is not None:
            self._isinstance(self._isinstance_call(node), generic, imports)  # type: ignore[arg-type]
        else:
            message = "torch.cuda.OutOfMemoryError -> torch.OutOfMemoryError"
            self.replace(node, cst.parse_expression(generic), message, imports=imports)
        self.mark(node, _MARKER)

    def _already_neuron(self, node: cst.Comparison) -> bool:
        """The test is already one operand of ``... or "NRT allocation failed" in str(e)`` (ported)."""
        top: cst.CSTNode = node
        while isinstance(self.parent(top), cst.BooleanOperation):
            top = self.parent(top)  # type: ignore[assignment]
        return top is not node and _NEURON_MESSAGES[0] in self.context.module.code_for_node(top)

    def _last_handler(self, handler: cst.ExceptHandler) -> bool:
        """No handler follows: a ``raise`` inside a handler skips its siblings, so catching every
        RuntimeError here would hide it from a later ``except RuntimeError``."""
        statement = self.parent(handler)
        return (
            isinstance(statement, cst.Try)
            and statement.handlers[-1] is handler
            and isinstance(handler.body, cst.IndentedBlock)
        )

    def _generic_name(self, node: cst.CSTNode) -> tuple[str, tuple[ImportSpec, ...]]:
        parts = (dotted(node) or "").split(".")
        if len(parts) >= 3 and parts[-2] == "cuda":
            return ".".join([*parts[:-2], "OutOfMemoryError"]), ()
        name, imports = torch_ref(self.context.module)
        return f"{name}.OutOfMemoryError", imports

    def _drop_old_import(self, node: cst.CSTNode) -> None:
        parts = (dotted(node) or "").split(".")
        if len(parts) >= 3 and parts[-2] == "cuda":
            return
        if parts[0] == "cuda":
            self.drop_import_if_unused(ImportSpec("torch", "cuda"))
        else:
            self.drop_import_if_unused(ImportSpec("torch.cuda", "OutOfMemoryError"))

    def _handler(self, handler: cst.ExceptHandler, generic: str, imports: tuple[ImportSpec, ...]) -> None:
        name = handler.name.name.value if handler.name is not None and isinstance(handler.name.name, cst.Name) else None
        bound = name or "oom_error"
        guard = cst.parse_statement(
            f"if not isinstance({bound}, {generic}) and not ({_neuron_oom_test(bound)}):\n    raise\n"
        )

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.ExceptHandler) and isinstance(updated.body, cst.IndentedBlock)
            caught = cst.parse_expression(f"({generic}, RuntimeError)")
            body = updated.body.with_changes(body=[guard, *updated.body.body])
            return updated.with_changes(type=caught, name=cst.AsName(name=cst.Name(bound)), body=body)

        message = "except torch.cuda.OutOfMemoryError -> also catch Neuron's RuntimeError allocation failure"
        self.replace(handler, transform, message, imports=imports)

    def _isinstance_call(self, node: cst.CSTNode) -> cst.Call | None:
        arg = self.parent(node)
        call = self.parent(arg) if isinstance(arg, cst.Arg) else None
        if (
            isinstance(call, cst.Call)
            and dotted(call.func) == "isinstance"
            and len(call.args) == 2
            and call.args[1] is arg
            and dotted(call.args[0].value) is not None
        ):
            return call
        return None

    def _isinstance(self, call: cst.Call, generic: str, imports: tuple[ImportSpec, ...]) -> None:
        value = dotted(call.args[0].value) or ""
        text = f"(isinstance({value}, {generic}) or isinstance({value}, RuntimeError) and ({_neuron_oom_test(value)}))"
        message = "isinstance(e, torch.cuda.OutOfMemoryError) -> also a Neuron RuntimeError allocation failure"
        self.replace(call, cst.parse_expression(text), message, imports=imports)
