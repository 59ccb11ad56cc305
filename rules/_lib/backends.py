"""CUDA backends of a device abstraction: the parts of a file a port keeps whole.

No rule lives here. Real projects hold the CUDA *backend* of their own device abstraction (DeepSpeed's
``accelerator/cuda_accelerator.py``: ``class CUDA_Accelerator(DeepSpeedAccelerator)``; Lightning's
``accelerators/cuda.py``: ``class CUDAAccelerator(Accelerator)`` with ``num_cuda_devices()``;
Composer's ``devices/device_gpu.py``: ``class DeviceGPU(Device)`` beside ``device_neuron.py``;
MMEngine's ``is_cuda_available()`` beside ``is_npu_available()``). Porting such code makes the CUDA
backend answer for Trainium (its ``is_available`` true on Neuron, its memory calls reading Neuron
counters), which is wrong: the backend stays CUDA's, and Neuron gets a backend of its own beside it.

The engine (``porter.engine.core``) drops every edit and change the rules report inside a scope found
here and puts one review marker (``CODE``) on the scope when it dropped something; the verifier
(``porter.engine.verify``) reports no CUDA-only code there (kept on purpose, and said so by the
marker). No rule needs code of its own for it.

Heuristic (what makes a scope a CUDA backend; only top-level classes, and whole files):

* names are read as words (``CUDA_Accelerator`` -> cuda, accelerator; ``DeviceGPU`` -> device,
  gpu; ``pl_cuda`` -> pl, cuda); a *CUDA word* is one of ``CUDA_WORDS``;
* **class**: a top-level class whose name has a CUDA word and one of whose bases (by qualified
  name, so aliases count: ``from x import Accelerator as Base``; else as spelled) has an
  abstraction word (``ABSTRACTION_WORDS``: accelerator, backend, platform, device) in its last
  name — a CUDA-named implementation of a device abstraction;
* **method**: a method named ``cuda`` of a top-level class (``def cuda(self, device=None)``,
  beside ``to``/``cpu``/``musa``): the class's own CUDA member — ``x.cuda()`` means CUDA, and
  porter ports its callers to ``.to(...)``; ported, ``.cuda()`` would move to Neuron;
* **module**: the file's name has a CUDA word (``cuda.py``, ``cuda_accelerator.py``,
  ``device_gpu.py``) and it defines such a class: the whole file is the backend (Lightning's
  module-level ``is_cuda_available()`` / ``num_cuda_devices()`` with it). The siblings are read
  from the name only: a file is judged by its own bytes and name (so a cached port stays right),
  and a cuda-named module with no backend class is ported as usual.

Not backends, ported as usual: an ordinary class named ``CudaHelper`` (no abstraction base), any
``if cuda:`` code of a training script, and per-device probe *functions* (MMEngine's
``is_cuda_available()`` beside ``is_npu_available()``): the rest of such a project calls them as
its CUDA test, and those callers' branches are ported (``.cuda()`` -> ``.to("neuron")``), so a
probe kept false on Neuron would leave every ported caller dead there; ported, the probe and its
callers agree. A class is chosen by name through a registry or a probe of its own
(``CUDAAccelerator.is_available()``), so keeping it whole changes no caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import QualifiedName
from libcst.metadata.base_provider import LazyValue
from libcst.metadata.position_provider import NEWLINE_RE

from porter.engine.changes import Change, Kind, Safety
from porter.engine.rule import MARKER_PREFIX, Edit, FileContext, has_marker, one_line
from porter.rules._lib.backend_names import ABSTRACTION_WORDS, CUDA_WORDS, cuda_named, words
from porter.rules._lib.nodes import dotted

CODE = "NRN115"
SUMMARY = "a CUDA backend of a device abstraction is kept whole (add a Neuron backend beside it)"


Names = Mapping[cst.CSTNode, set[QualifiedName]]


@dataclass(frozen=True)
class Scope:
    """One CUDA backend: ``node`` is a top-level class or function of the module, or the module."""

    node: cst.CSTNode
    marker_at: cst.BaseStatement  # the statement that carries the one marker
    what: str  # e.g. "class CUDAAccelerator implements Accelerator"
    kind: str  # "class" (a CUDA-named subclass of an abstraction), "module" (a file holding one), "method" (a def cuda)


@dataclass(frozen=True)
class BackendScopes:
    """The CUDA backend scopes of one file (see the module doc); usually none."""

    scopes: tuple[Scope, ...]

    @property
    def whole_module(self) -> bool:
        return any(isinstance(scope.node, cst.Module) for scope in self.scopes)

    def holding(self, node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> Scope | None:
        """The scope ``node`` is in (the scope's own node included), or None."""
        if not self.scopes:
            return None
        by_node = {id(scope.node): scope for scope in self.scopes}
        current: cst.CSTNode | None = node
        while current is not None:
            found = by_node.get(id(current))
            if found is not None:
                return found
            current = parents.get(current)
        return None


NO_SCOPES = BackendScopes(())


def backend_scopes(module: cst.Module, names: Names, path: str) -> BackendScopes:
    """The CUDA backend scopes of ``module`` (the file ``path``), read from its top-level classes."""
    found: list[Scope] = []
    methods: list[Scope] = []
    for node in module.body:
        if not isinstance(node, cst.ClassDef):
            continue
        base = _abstraction_base(node, names) if CUDA_WORDS.intersection(words(node.name.value)) else None
        if base is not None:
            found.append(Scope(node, node, f"the CUDA backend class {node.name.value}, implementing {base}", "class"))
        elif isinstance(node.body, cst.IndentedBlock):
            methods.extend(
                Scope(method, method, f"{node.name.value}.cuda(), the class's own move to CUDA", "method")
                for method in node.body.body
                if isinstance(method, cst.FunctionDef) and method.name.value == "cuda"
            )
    if found and cuda_named(path):
        return BackendScopes((Scope(module, found[0].marker_at, f"the whole file: {found[0].what}", "module"),))
    return BackendScopes((*found, *methods))


def _abstraction_base(node: cst.ClassDef, names: Names) -> str | None:
    """The first base whose name has an abstraction word in its last part: its qualified name
    when it has one (``B`` imported as ``from lib import Backend as B``: ``lib.Backend``)."""
    for arg in node.bases:
        if arg.keyword is not None or arg.star:
            continue
        spelled = dotted(arg.value)
        if spelled is None:
            continue
        found = names.get(arg.value) or set()
        if isinstance(found, LazyValue):  # libcst's own provider resolves names on first read
            found = found()
        candidates = sorted(q.name for q in found) + [spelled]
        for name in candidates:
            if ABSTRACTION_WORDS.intersection(words(name.split(".")[-1])):
                return name
    return None


def keep_whole(context: FileContext, scopes: BackendScopes, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> None:
    """The engine's step: drop the edits and changes the rules reported inside ``scopes`` and put
    one ``CODE`` marker on each scope that lost something (none when it already carries one)."""
    if not scopes.scopes:
        return
    spans = _line_spans(context, scopes)
    lost: dict[int, list[str]] = {}  # scope id -> codes of the changes not made
    edits = []
    for edit in context.edits:
        scope = scopes.holding(edit.target, parents)
        if scope is None:
            edits.append(edit)
        else:
            lost.setdefault(id(scope), [])
    changes = []
    for change, from_context in context.changes:
        scope = next((scope for first, last, scope in spans if first <= change.line <= last), None)
        if scope is None:
            changes.append((change, from_context))
        else:
            lost.setdefault(id(scope), []).append(change.code)
    for scope in scopes.scopes:
        codes = lost.get(id(scope))
        if codes is None or has_marker(scope.marker_at, CODE):
            continue
        # No count or rule list in the text: one pass must equal the rules applied one by one
        # (the first rule's pass would write its own count, and the marker then stays).
        counted = "porter changes nothing in it"
        if scope.kind == "method":
            advice = "x.cuda() keeps meaning CUDA; on Neuron callers use .to(device)"
        else:
            advice = "it answers for CUDA only, ported it would claim Trainium: add a Neuron backend beside it"
        message = one_line(f"CUDA code kept whole ({scope.what}): {counted}; {advice}")
        line, column = context.position(scope.marker_at)
        changes.append((Change(CODE, message, context.path, line, column, Safety.REVIEW, Kind.MARKER), False))
        edits.append(Edit(target=scope.marker_at, code=CODE, order=(0, CODE), comments=(f"{MARKER_PREFIX} {CODE} {message}",)))
    context.edits, context.changes = edits, changes


def _line_spans(context: FileContext, scopes: BackendScopes) -> list[tuple[int, int, Scope]]:
    """(first line, last line, scope) of each scope in the original source: from its first
    decorator to its last line (a change is recorded at the line of the node it is about)."""
    if scopes.whole_module:
        return [(1, 1 << 62, scopes.scopes[0])]
    spans = []
    for scope in scopes.scopes:
        node = scope.node
        assert isinstance(node, (cst.ClassDef, cst.FunctionDef))
        first = context.position(node.decorators[0] if node.decorators else node)[0]
        count = _lines(context.module.code_for_node(node.with_changes(leading_lines=())))
        spans.append((first, first + count - 1, scope))
    return spans


def _lines(code: str) -> int:
    return len(NEWLINE_RE.findall(code))  # counted as PositionProvider counts them (CR, LF, CRLF)


__all__ = ["CODE", "NO_SCOPES", "SUMMARY", "BackendScopes", "Scope", "backend_scopes", "keep_whole"]
