"""NRN711-NRN713: static sequence shapes for Hugging Face tokenizers, collators and generate()."""

from __future__ import annotations

import ast
import re
from typing import ClassVar

import libcst as cst

from porter.engine.astcheck import SourceFacts, starred
from porter.engine.astcheck import dotted as ast_dotted
from porter.engine.astcheck import keyword as ast_keyword
from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import add_keyword_keep_layout, keyword
from porter.rules._lib.hf import HF_LIBRARIES, origin
from porter.rules._lib.nodes import dotted, method_name, string_value
from porter.rules._lib.tree import child_index

PAD_MULTIPLE = 128  # SBUF/PSUM partition width (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)); not a documented Neuron padding rule
_TOKENIZER_NAME = re.compile(r"(?i)(tokenizer|tokeniser|^tok$|_tok$|processor)$")
_TOKENIZER_METHODS = frozenset({"encode_plus", "batch_encode_plus", "__call__", "pad"})
# Padding to the batch's own longest sequence inside a collate function (issue 16 §5).
_PAD_TO_LONGEST = frozenset({"torch.nn.utils.rnn.pad_sequence"})
_COLLATE_NAME = re.compile(r"(?i)collat")
_COLLATORS = frozenset(
    {
        "DataCollatorWithPadding",
        "DataCollatorForLanguageModeling",
        "DataCollatorForSeq2Seq",
        "DataCollatorForTokenClassification",
    }
)
_FALSE_TRUNCATION = frozenset({"False", "None"})
_GENERATION_KEYWORDS = frozenset(
    {"max_new_tokens", "max_length", "do_sample", "num_beams", "input_ids", "attention_mask", "generation_config", "top_p", "top_k", "temperature"}
)
_MODEL_NAME = re.compile(r"(?i)(model|lm|net|generator|policy|llm|unwrapped)")


def _pad_value(call: cst.Call) -> str | None:
    """``padding=True`` -> "true", ``padding="longest"`` -> "longest", else None (nothing to do).
    ``tokenizer.pad(features)`` pads to the longest by default (its ``padding=True``)."""
    arg = keyword(call, "padding")
    if arg is None:
        plain = [a for a in call.args if a.keyword is None]
        return "true" if method_name(call) == "pad" and len(plain) == 1 else None
    if isinstance(arg.value, cst.Name) and arg.value.value == "True":
        return "true"
    if string_value(arg.value) == "longest":
        return "longest"
    return None


def _pads_to_max_length(call: cst.Call) -> bool:
    arg = keyword(call, "padding")
    return arg is not None and string_value(arg.value) == "max_length"


def _truncates(call: cst.Call) -> bool:
    arg = keyword(call, "truncation")
    if arg is None:
        return False
    if isinstance(arg.value, cst.Name):
        return arg.value.value not in _FALSE_TRUNCATION
    value = string_value(arg.value)
    if value is not None:
        return value != "do_not_truncate"
    return False  # a variable: unknown


def _quote_like(call: cst.Call) -> str:
    arg = keyword(call, "padding")
    if arg is not None and isinstance(arg.value, cst.SimpleString):
        return arg.value.quote
    return '"'


def _may_be_none(node: cst.BaseExpression) -> bool:
    """``None`` or a conditional with a ``None`` branch (``8 if use_fp16 else None``)."""
    if isinstance(node, cst.Name):
        return node.value == "None"
    if isinstance(node, cst.IfExp):
        return _may_be_none(node.body) or _may_be_none(node.orelse)
    return False


class StaticPadding(Rule):
    """Pad tokenized batches to a static length.

    What it does:
        A tokenizer call (``tokenizer(...)``, ``self.tokenizer(...)``, ``tok.encode_plus(...)``,
        ``batch_encode_plus``) with ``padding=True`` or ``padding="longest"`` becomes
        ``padding="max_length"`` when it truncates to a known ``max_length`` (one static shape,
        never longer than the truncation length); otherwise it keeps its padding and gets
        ``pad_to_multiple_of=128`` (or a literal ``max_length`` below 128, so a sequence within
        it is never padded past it) (NRN711). ``DataCollatorWithPadding``,
        ``DataCollatorForLanguageModeling``, ``DataCollatorForSeq2Seq`` and
        ``DataCollatorForTokenClassification`` without ``pad_to_multiple_of`` (or with one that can be
        ``None``, like the HF examples' ``8 if accelerator.use_fp16 else None``) get
        ``pad_to_multiple_of=128`` (NRN712) — or, when a tokenizer call of the file truncates (or pads) to a
        ``max_length`` that is visible at the collator, ``pad_to_multiple_of=<that max_length>`` (every
        batch exactly that long, never longer); when it is not visible, a marker instead (128 could
        pad past the truncation length and the model's positions). TRL configs are left to the Hugging Face rules.

    Why:
        TorchNeuron compiles one graph per input shape (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)). Padding to the longest
        sequence of each batch makes almost every batch a new shape, so a new compile.
        ``max_length`` padding gives one shape; ``pad_to_multiple_of=128`` bounds the shapes to a
        few buckets (128 is the SBUF partition width; a 128 multiple is not itself a documented
        Neuron rule — unverified).

    Before:
        enc = tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        enc = tokenizer(texts, padding="longest", return_tensors="pt")
        collator = DataCollatorWithPadding(tokenizer)

    After:
        enc = tokenizer(texts, padding="max_length", truncation=True, max_length=256, return_tensors="pt")
        enc = tokenizer(texts, padding="longest", return_tensors="pt", pad_to_multiple_of=128)
        collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=128)

    Safety:
        Review: batches are longer (more compute on padding tokens, same results with the
        attention mask). ``pad_to_multiple_of=128`` can pad past a model's maximum positions when
        that maximum is not a multiple of 128 and no truncation bounds the length (measured: a
        64-position model crashes in its position embedding) — check the model config.
        Tokenizers are recognised by name (``tokenizer``, ``tok``, ``processor``, ending in
        ``_tokenizer``); a tokenizer held under another name is missed. The receiver must be shown
        to be built by Hugging Face (``AutoTokenizer.from_pretrained(...)`` assigned in the same
        function or at module level, ``self.tokenizer`` set so in the class, a parameter annotated
        with a transformers class; ``rules/_lib/hf.py`` ``origin``): the project's own tokenizer
        class is left alone, and a receiver not in view (a function parameter) gets an NRN715
        marker instead of an edit. Collators are matched by
        qualified name (``transformers.DataCollatorWithPadding``), any import spelling.
        ``tokenizer.pad(features)`` pads to the longest by default and is treated as
        ``padding=True``. A ``pad_sequence(...)`` in a collate function (named ``*collate*`` or
        passed as ``collate_fn=``) gets an NRN716 marker only: it takes no target length.
    """

    code: ClassVar[str] = "NRN711"
    name: ClassVar[str] = "static-padding"
    summary: ClassVar[str] = 'tokenizer padding=True/"longest" -> "max_length" (or pad_to_multiple_of=128); HF collators padded to a fixed multiple'
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("padding", "DataCollator", ".pad(", "pad_sequence")
    # padding= counts only with a value the rule edits (_pad_value: True or a string, maybe in
    # parentheses), not a conv layer's padding=1.
    trigger_pattern: ClassVar[str] = (
        r"DataCollator|pad_sequence|\bpadding(?:[\s\\]|#[^\r\n]*[\r\n])*=(?:[\s\\(]|#[^\r\n]*[\r\n])*(?:True\b|[rRuU]?[\"'])"
        r"|\.(?:[\s\\]|#[^\r\n]*[\r\n])*pad\b"
    )
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN712": "Hugging Face data collator -> pad_to_multiple_of=<truncation length> or 128 (bounded sequence shapes)",
        "NRN715": "padding tokenizer call on an object not shown to be a Hugging Face tokenizer: review marker (no keyword inserted)",
        "NRN716": "collate function pads each batch to its longest sequence (pad_sequence): review marker",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 70

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """Every edit comes from ``visit_Call`` on a call without ``*``/``**``: a collator or
        ``pad_sequence`` (``_collator``/``matches``: a qualified name from an import,
        ``SourceFacts.import_names``), or a tokenizer call (``_is_tokenizer_call``, the same test on ``ast``) without
        ``pad_to_multiple_of`` whose ``_pad_value`` is set: ``padding=True``, ``padding="longest"``
        (a plain string literal or a concatenation: one ``str`` constant), or ``.pad(x)`` with one
        positional argument and no ``padding=``."""
        for call in facts.of(ast.Call):
            if starred(call):
                continue
            for name in facts.import_names(call.func):
                head, _, last = name.rpartition(".")
                if last in _COLLATORS and head.split(".")[0] == "transformers" or name in _PAD_TO_LONGEST:
                    return True
            if ast_keyword(call, "pad_to_multiple_of") is not None or not _ast_tokenizer_call(call):
                continue
            padding = ast_keyword(call, "padding")
            if padding is None:
                if isinstance(call.func, ast.Attribute) and call.func.attr == "pad" and len(call.args) == 1:
                    return True
            elif isinstance(padding.value, ast.Constant) and (padding.value.value is True or padding.value.value == "longest"):
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if any(arg.star for arg in node.args):
            return
        collator = self._collator(node)
        if collator is not None:
            self._pad_collator(node, collator)
            return
        if self.matches(node.func, *_PAD_TO_LONGEST):
            self._collate_pad(node)
            return
        if self._is_tokenizer_call(node) and _pad_value(node) is not None and keyword(node, "pad_to_multiple_of") is None:
            receiver = node.func.value if isinstance(node.func, cst.Attribute) else node.func
            built = origin(self, receiver)
            if built == "library":
                self._pad_tokenizer(node)
            elif built == "unknown":
                self.mark(
                    node,
                    f"{dotted(receiver) or 'tokenizer'} pads to the longest sequence (a new shape per batch) and is not shown "
                    "to be a Hugging Face tokenizer here: if it is one, pad to max_length or pad_to_multiple_of=128",
                    code="NRN715",
                )

    def _collate_pad(self, call: cst.Call) -> None:
        """``pad_sequence(...)`` in a collate function (named ``*collat*`` or passed as
        ``collate_fn=``): each batch is padded to its own longest sequence. pad_sequence takes no
        target length, so a marker says what to do."""
        function = next((a for a in self.ancestors(call) if isinstance(a, cst.FunctionDef)), None)
        if function is None:
            return
        name = function.name.value
        if not _COLLATE_NAME.search(name) and name not in self._collate_fns:
            return
        self.mark(
            call,
            f"{name} pads each batch to its own longest sequence (a new shape, so a Neuron compile, per batch): "
            "pad to a fixed max_length, or up to a multiple of 128 (e.g. torch.nn.functional.pad after pad_sequence)",
            code="NRN716",
        )

    def _collator(self, call: cst.Call) -> str | None:
        for name in self.qualified(call.func):
            head, _, last = name.rpartition(".")
            if last in _COLLATORS and head.split(".")[0] == "transformers":
                return last
        return None

    def visit_Module(self, node: cst.Module) -> None:
        # Truncation lengths of the file's tokenizer calls: a collator must never pad past them.
        # A call that pads to max_length (as written, or after NRN711) fixes the length too: a
        # collator padding its batches to 128 would grow every batch past it.
        self._max_lengths: list[cst.BaseExpression] = []
        self._collate_fns: set[str] = set()
        if "collate_fn" in self.context.text:
            for current in child_index(self).find(node, cst.Arg):
                assert isinstance(current, cst.Arg)
                if current.keyword is not None and current.keyword.value == "collate_fn" and isinstance(current.value, cst.Name):
                    self._collate_fns.add(current.value.value)
        if "max_length" not in self.context.text:
            return
        for current in child_index(self).find(node, cst.Call):
            assert isinstance(current, cst.Call)
            if self._is_tokenizer_call(current) and (_truncates(current) or _pads_to_max_length(current)):
                found = keyword(current, "max_length")
                if found is not None:
                    self._max_lengths.append(found.value)

    def _collator_multiple(self, call: cst.Call) -> cst.BaseExpression | None | bool:
        """What to pad the collator's batches to a multiple of.

        128 when no tokenizer of the file truncates; the truncation length when one does and its
        expression is visible at the collator (so every batch is padded to exactly that length);
        False when it is not visible (padding to 128 could pass it: marker instead).
        """
        if not self._max_lengths:
            return cst.Integer(str(PAD_MULTIPLE))
        module = self.context.module
        if len({module.code_for_node(length) for length in self._max_lengths}) > 1:
            return False  # several truncation lengths: which one feeds this collator is not in view
        length = self._max_lengths[0]
        if isinstance(length, cst.Integer):
            return length
        root = (dotted(length) or "").split(".")[0]
        if root and root in self._visible_names(call):
            return length
        return False

    def _visible_names(self, call: cst.Call) -> set[str]:
        names: set[str] = set()
        for statement in self.context.module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign):
                        names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
        for ancestor in self.ancestors(call):
            if isinstance(ancestor, cst.FunctionDef):
                names.update(param.name.value for param in ancestor.params.params)
                for current in child_index(self).find(ancestor.body, cst.AssignTarget):
                    if isinstance(current, cst.AssignTarget) and isinstance(current.target, cst.Name):
                        names.add(current.target.value)
        return names

    def _pad_collator(self, call: cst.Call, collator: str) -> None:
        existing = keyword(call, "pad_to_multiple_of")
        multiple = self._collator_multiple(call)
        if existing is not None:
            if _may_be_none(existing.value) and isinstance(multiple, cst.BaseExpression):
                # pad_to_multiple_of=(8 if accelerator.use_fp16 else None): None under bf16 on Neuron
                shown = self.context.module.code_for_node(multiple)
                self.replace(
                    existing.value,
                    multiple,
                    f"{collator}: pad_to_multiple_of={shown} (the fp16-only value is None on Neuron)",
                    code="NRN712",
                )
            elif _may_be_none(existing.value):
                self.mark(call, f"{collator}: pad_to_multiple_of is None off fp16: set it to the tokenizer's max_length", code="NRN712")
            return
        if len([arg for arg in call.args if arg.keyword is None]) > 2:
            return  # positional pad_to_multiple_of possible
        padding = keyword(call, "padding")
        if padding is not None and string_value(padding.value) == "max_length":
            return
        if multiple is False or multiple is None or isinstance(multiple, bool):
            self.mark(
                call,
                f"{collator} pads to the longest sequence: set pad_to_multiple_of to the tokenizer's max_length",
                code="NRN712",
            )
            return
        value = multiple
        shown = self.context.module.code_for_node(value)

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            return add_keyword_keep_layout(updated, "pad_to_multiple_of", value)

        why = "bounded shapes; check the model's max positions" if shown == str(PAD_MULTIPLE) else "the truncation length: one shape"
        self.replace(call, transform, f"{collator}: pad_to_multiple_of={shown} ({why})", code="NRN712")

    def _is_tokenizer_call(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _TOKENIZER_METHODS:
            receiver = dotted(func.value) or ""
            return bool(_TOKENIZER_NAME.search(receiver.split(".")[-1]))
        text = dotted(func) or ""
        return bool(text) and bool(_TOKENIZER_NAME.search(text.split(".")[-1]))

    def _pad_tokenizer(self, call: cst.Call) -> None:
        pad = _pad_value(call)
        if pad is None or keyword(call, "pad_to_multiple_of") is not None:
            return
        max_length = keyword(call, "max_length")
        if max_length is not None and _truncates(call):
            quote = _quote_like(call)

            def to_max_length(updated: cst.CSTNode) -> cst.CSTNode:
                assert isinstance(updated, cst.Call)
                return add_keyword_keep_layout(updated, "padding", cst.SimpleString(f"{quote}max_length{quote}"))

            shown = self.context.module.code_for_node(max_length.value)
            self.replace(
                call,
                to_max_length,
                f'padding="max_length": every batch padded to the truncation length ({shown}), one static shape',
            )
            return

        # Never pad past a literal max_length below 128: pad to a multiple of it instead.
        multiple = PAD_MULTIPLE
        if max_length is not None and isinstance(max_length.value, cst.Integer):
            multiple = min(PAD_MULTIPLE, int(max_length.value.evaluated_value))

        def add_multiple(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            return add_keyword_keep_layout(updated, "pad_to_multiple_of", cst.Integer(str(multiple)))

        self.replace(
            call,
            add_multiple,
            f"pad_to_multiple_of={multiple}: bounded shapes (no known truncation length; check the model's max positions)",
        )


def _ast_tokenizer_call(call: ast.Call) -> bool:
    """``StaticPadding._is_tokenizer_call`` on CPython's tree."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _TOKENIZER_METHODS:
        receiver = ast_dotted(func.value) or ""
        return bool(_TOKENIZER_NAME.search(receiver.split(".")[-1]))
    text = ast_dotted(func) or ""
    return bool(text) and bool(_TOKENIZER_NAME.search(text.split(".")[-1]))


class GenerateStaticCache(Rule):
    """Use a static KV cache for ``model.generate(...)``.

    What it does:
        A ``.generate(...)`` call on a model (receiver named like ``model``/``lm``/``net``, or a call
        with generation keywords such as ``max_new_tokens``) without ``cache_implementation``,
        ``past_key_values`` or ``**kwargs`` gets ``cache_implementation="static"`` when the file
        shows the receiver was built by Hugging Face (``AutoModelForCausalLM.from_pretrained``,
        followed through ``.to()``/``.eval()``, ``get_peft_model``, ``accelerator.prepare`` /
        ``unwrap_model``, ``self.model = ...`` in the class, a ``PreTrainedModel`` annotation or
        subclass). A project's own ``generate()`` (a class of the file that is no Transformers
        model) is left alone, and so is a function of an imported module that is not a Hugging Face
        library (``from torchtune import generation; generation.generate(model=...)``, resolved by
        qualified name, receiver not named like a model); a receiver not in view (a parameter) gets an NRN714 marker.

    Why:
        The default dynamic KV cache grows by one token per decoding step: a new shape, so a new
        compile, every token. A static cache is allocated once at its full length; the decoding
        graph keeps one shape (the TorchNeuron Whisper example and the HF inference tutorial use
        ``cache_implementation="static"``, AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)).

    Before:
        out = model.generate(input_ids, max_new_tokens=32)

    After:
        out = model.generate(input_ids, max_new_tokens=32, cache_implementation="static")

    Safety:
        Review: the cache is allocated for the whole ``max_length`` up front (more memory), and a
        model class without static-cache support raises at the first call. Receiver heuristic: a
        name or generation keywords make it a candidate; only a receiver the file shows to be built
        by a Hugging Face library (``transformers``, ``trl``, ``peft``, ``optimum``) gets the keyword,
        so a project's own ``generate(self, idx, max_new_tokens)`` never gets a ``TypeError``.
    """

    code: ClassVar[str] = "NRN713"
    name: ClassVar[str] = "generate-static-cache"
    summary: ClassVar[str] = 'model.generate(...) -> cache_implementation="static" (one decoding shape)'
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = (".generate(",)
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN714": "generate() on an object not shown to be a Transformers model: review marker (no keyword inserted)",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = 70

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """``visit_Call`` edits or marks only a ``x.generate(...)`` call without ``*``/``**``,
        ``cache_implementation=`` or ``past_key_values=``."""
        return any(
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "generate"
            and not starred(call)
            and ast_keyword(call, "cache_implementation") is None
            and ast_keyword(call, "past_key_values") is None
            for call in facts.of(ast.Call)
        )

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) != "generate" or any(arg.star for arg in node.args):
            return
        if keyword(node, "cache_implementation") is not None or keyword(node, "past_key_values") is not None:
            return
        if not isinstance(node.func, cst.Attribute):
            return
        receiver = dotted(node.func.value)
        named = receiver is not None and bool(_MODEL_NAME.search(receiver.split(".")[-1]))
        generation = any(arg.keyword is not None and arg.keyword.value in _GENERATION_KEYWORDS for arg in node.args)
        if not (named or generation):
            return
        if not named and any(not name.startswith(HF_LIBRARIES) for name in self.imported(node.func)):
            return  # a module's function (torchtune's generation.generate): not a model method
        built = origin(self, node.func.value)
        if built == "own":
            return  # the project's own generate(): a Transformers keyword would be a TypeError
        if built == "unknown":
            self.mark(
                node,
                f'{receiver or "this object"}.generate(): not shown to be a Transformers model here; if it is one, '
                'add cache_implementation="static" (one decoding shape)',
                code="NRN714",
            )
            return

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Call)
            return add_keyword_keep_layout(updated, "cache_implementation", cst.SimpleString('"static"'))

        self.replace(node, transform, 'cache_implementation="static": one KV-cache shape for every decoding step')
