"""NRN609: the causal hint for torch's Transformer modules, so they stop testing the mask on the host."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, cast

import libcst as cst

from porter.engine.astcheck import SourceFacts
from porter.engine.changes import Safety
from porter.engine.rule import FileContext, Rule
from porter.rules._lib.args import add_keyword_keep_layout
from porter.rules._lib.causal_masks import SLOTS, causal_value, constructors_in, module_kind, unhinted_masks
from porter.rules._lib.nodes import dotted
from porter.rules._lib.tree import enclosing_function

_SOURCE = "torch/nn/modules/transformer.py:535, :639"


class TransformerMask(Rule):
    """Pass ``is_causal=True`` where a Transformer module is given a mask that is provably causal.

    What it does:
        A call of an ``nn.TransformerEncoder`` (``mask``), ``nn.TransformerDecoder``
        (``tgt_mask``) or ``nn.Transformer`` (``src_mask``/``tgt_mask``) held in ``self.X`` or a
        local, given a mask and not its hint (``is_causal`` / ``tgt_is_causal`` /
        ``src_is_causal``): where the mask is ``nn.Transformer.generate_square_subsequent_mask(n)``
        (directly, or through a local assigned once before the call in the same function,
        optionally moved with ``.to(device)``), the hint ``=True`` is added. Any other mask gets a
        review marker asking for the hint.

    Why:
        Without the hint, each call runs ``_detect_is_causal_mask`` (torch 2.13
        ``torch/nn/modules/transformer.py``: the encoder at :535, the decoder at :639), which
        builds a causal mask and reads ``bool((mask == causal).all())`` on the host: a device
        sync every step on Trainium, and a data-dependent branch that Dynamo cannot trace (a
        graph break, an error under ``fullgraph=True``). With the hint the function returns it
        as it is. The layers below use the hint the same way in both programs.

    Before:
        def forward(self, src):
            mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
            return self.encoder(src, mask)

    After:
        def forward(self, src):
            mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
            return self.encoder(src, mask, is_causal=True)

    Safety:
        Safe where the hint is added: the mask holds the values the detection compares with
        (``generate_square_subsequent_mask`` builds -inf above the diagonal, as the detection
        does in the mask's dtype; no ``dtype=`` and only device moves allowed), and a square mask
        of any size other than the sequence length fails the attention's own shape check, so the
        detection would have answered True on every call that runs. The module is found by the
        qualified name of its constructor in ``self.X = nn.TransformerEncoder(...)`` (any method
        of the enclosing class) or ``X = ...`` (the enclosing function), each assigned once; a
        module handed in from elsewhere is missed. Calls with ``*args``/``**kwargs`` are left
        alone. Review (a marker) for any other mask: a padding mask or a mask built elsewhere may
        not be causal, and only the author knows which hint is true.
    """

    code: ClassVar[str] = "NRN609"
    name: ClassVar[str] = "transformer-causal-mask"
    summary: ClassVar[str] = "is_causal=True for nn.TransformerEncoder/Decoder given generate_square_subsequent_mask (no host test of the mask)"
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("TransformerEncoder", "TransformerDecoder", "Transformer")
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN610": "a Transformer module tests a mask of unknown shape on the host every call: pass its causal hint (review marker)",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 70

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """Every edit is on a call of a target assigned from a call whose qualified name is a SLOTS
        key (its last part is then an identifier of the file)."""
        return any(name.rsplit(".", 1)[-1] in facts.identifiers for name in SLOTS)

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._scopes: dict[cst.CSTNode, dict[str, str]] = {}  # class or def -> its constructors
        # def or class -> the Assigns under it, pre-order (built on first need, once per file)
        self._assigns: dict[cst.CSTNode, list[cst.CSTNode]] | None = None

    def _constructors(self, scope: cst.CSTNode) -> dict[str, str]:
        found = self._scopes.get(scope)
        if found is None:
            tree = self.context.tree
            nodes = self._assigns_under(scope) if tree is not None and scope in tree.parents else None
            found = self._scopes[scope] = constructors_in(scope, self.qualified, nodes)
        return found

    def _assigns_under(self, scope: cst.CSTNode) -> list[cst.CSTNode]:
        """The Assigns of ``scope``'s subtree in pre-order, as ``tree.walk(scope)`` meets them:
        constructors_in reads no other node, and walking every def and class of a large file
        (each node once per enclosing scope) was most of this rule's cost."""
        if self._assigns is None:
            tree = self.context.tree
            assert tree is not None
            parents = tree.parents
            by_scope: dict[cst.CSTNode, list[cst.CSTNode]] = {}
            for assign in tree.find(tree.root, cst.Assign):  # the file's pre-order
                current = parents.get(assign)
                while current is not None:
                    if type(current) is cst.FunctionDef or type(current) is cst.ClassDef:
                        by_scope.setdefault(current, []).append(assign)
                    current = parents.get(current)
            self._assigns = by_scope
        return self._assigns.get(scope, [])

    def visit_Call(self, node: cst.Call) -> None:
        # module_kind looks the callee's dotted name up among the function's locals (no dot) and
        # the class's ``self.X`` targets: a callee of neither form (``torch.cat``, ``x.view``)
        # needs neither scope's constructors.
        name = dotted(node.func)
        local = name is not None and "." not in name
        if name is None or not (local or name.startswith("self.")):
            return
        function = enclosing_function(self, node)
        known: dict[str, str] = {}
        if function is not None:
            if local:
                known.update({k: v for k, v in self._constructors(function).items() if "." not in k})
            owner = None if local else next((a for a in self.ancestors(function) if isinstance(a, cst.ClassDef)), None)
            if owner is not None:
                known.update({k: v for k, v in self._constructors(owner).items() if k.startswith("self.")})
        kind = module_kind(node, known)
        if kind is None:
            return
        for slot, mask in unhinted_masks(node, kind):
            if causal_value(self._value(mask, node, function), self.qualified):
                self.replace(node, _with_hint(slot.hint),
                             f"{slot.hint}=True: {slot.mask} is generate_square_subsequent_mask, the causal mask torch "
                             f"would otherwise test on the host each call ({_SOURCE})")
            else:
                self.mark(node, f"{kind.rsplit('.', 1)[-1]} tests `{slot.mask}` on the host every call ({_SOURCE}, "
                          f"_detect_is_causal_mask: a sync, and a graph break): pass {slot.hint}=True if it is the "
                          f"causal mask, else {slot.hint}=False", code="NRN610")

    def _value(self, mask: cst.BaseExpression, call: cst.Call, function: cst.FunctionDef | None) -> cst.BaseExpression:
        """The mask's value: a local of ``function`` assigned once, in a statement of its body before the call's."""
        if not isinstance(mask, cst.Name) or function is None or not isinstance(function.body, cst.IndentedBlock):
            return mask
        if any(p.name.value == mask.value for p in (*function.params.params, *function.params.kwonly_params,
                                                      *function.params.posonly_params)):
            return mask
        body = list(function.body.body)
        here = self.statement_of(call)
        top = next((s for s in [here, *self.ancestors(here)] if any(s is b for b in body)), None)
        if top is None:
            return mask
        binds = [b for statement in body for b in _bindings(statement, mask.value)]
        before = [b for s in body[: next(i for i, b in enumerate(body) if b is top)] for b in _bindings(s, mask.value)]
        if len(binds) != 1 or len(before) != 1 or not isinstance(binds[0], cst.Assign):
            return mask
        return binds[0].value


def _with_hint(hint: str) -> Callable[[cst.CSTNode], cst.CSTNode]:
    def edit(updated: cst.CSTNode) -> cst.CSTNode:
        return add_keyword_keep_layout(cast(cst.Call, updated), hint, cst.Name("True"))

    return edit


def _bindings(statement: cst.CSTNode, name: str) -> list[cst.CSTNode]:
    """Every node in ``statement`` that binds ``name``: ``=`` (the Assign), ``+=``, annotated
    assignments, ``for``/``with``/``:=``/``except`` targets, imports, nested defs (anything but a
    plain ``=`` makes the value unknown)."""
    found: list[cst.CSTNode] = []

    def binds(target: cst.CSTNode | None) -> bool:
        return target is not None and any(isinstance(n, cst.Name) and n.value == name for n in _names(target))

    class _Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if any(binds(t.target) for t in node.targets):
                found.append(node)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if binds(node.target):
                found.append(node)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if binds(node.target):
                found.append(node)

        def visit_For(self, node: cst.For) -> None:
            if binds(node.target):
                found.append(node)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            if binds(node.target):
                found.append(node)

        def visit_AsName(self, node: cst.AsName) -> None:
            if binds(node.name):
                found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if node.name.value == name:
                found.append(node)

    statement.visit(_Collect())
    return found


def _names(target: cst.CSTNode) -> list[cst.CSTNode]:
    """The names a target binds (tuples and lists unpacked; ``a.b``/``a[0]`` bind none)."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _names(target.value)
    return []
