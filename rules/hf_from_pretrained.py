"""NRN811-NRN813: ``from_pretrained(...)`` of Transformers models: attention, device map, quantization."""

from __future__ import annotations

import re
from typing import ClassVar, cast

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import keyword
from porter.rules._lib.device import INT_DEVICE_NAME
from porter.rules._lib.hf import model_from_pretrained
from porter.rules._lib.nodes import dotted, string_value, with_string_value
from porter.rules._tables.hf import FLASH_ATTENTION

_CUDA = re.compile(r"^cuda(:(?P<index>\d+))?$")
_QUANTIZED = ("load_in_8bit", "load_in_4bit")
_BNB_CONFIGS = frozenset({"transformers.BitsAndBytesConfig", "transformers.utils.quantization_config.BitsAndBytesConfig"})


class HfFromPretrained(Rule):
    """Port ``from_pretrained`` arguments that only work on CUDA.

    What it does:
        For ``X.from_pretrained(...)`` where ``X`` resolves (by qualified name, any import
        spelling) to a Transformers class (``AutoModelForCausalLM``, ``BertForSequenceClassification``,
        ...; tokenizers, processors and configs excepted): ``attn_implementation=
        "flash_attention_2"``/``"flash_attention_3"`` -> ``"sdpa"`` (NRN811);
        ``device_map="cuda"``/``"cuda:N"``/``{"": N}``/``{"": "cuda:N"}`` -> ``"neuron"``/
        ``"neuron:N"`` (``{"": rank}`` -> ``{"": f"neuron:{rank}"}``) (NRN812);
        ``load_in_8bit``/``load_in_4bit`` and a ``quantization_config`` that is not an inline
        ``BitsAndBytesConfig(...)`` (NRN905 marks that one) get an NRN813 marker.
        ``torch_dtype``/``dtype`` float16 -> bfloat16 is done by NRN203 for every dtype
        keyword, ``from_pretrained`` included; ``device_map="auto"`` is marked by NRN851.

    Why:
        FlashAttention 2/3 are CUDA kernels (the ``flash_attn`` package); SDPA is what
        TorchNeuron decomposes (and transformers' default when nothing is asked for). A CUDA
        device map fails on Trainium, and an integer device in a device map means a CUDA
        ordinal. bitsandbytes 8/4-bit layers are CUDA-only: on Neuron load in bfloat16.

    Before:
        model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="flash_attention_2",
                                                     device_map={"": 0}, load_in_8bit=True)

    After:
        # porter: NRN813 load_in_8bit: bitsandbytes quantization is CUDA-only; load in bfloat16 (dtype=torch.bfloat16)
        model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="sdpa",
                                                     device_map="neuron", load_in_8bit=True)

    Safety:
        Safe for attention (same math, different kernel; sequence-packing features of
        FlashAttention like ``position_ids``-based varlen are not used by SDPA) and device maps.
        Receiver heuristic: the receiver must resolve to a name under ``transformers.``; a model
        class of the user's own (``MyModel.from_pretrained``) or one reached through a variable
        (``cls = AutoModel; cls.from_pretrained``) is missed, as are ``model_kwargs`` dicts
        (TRL's ``model_init_kwargs``) built elsewhere.
    """

    code: ClassVar[str] = "NRN811"
    name: ClassVar[str] = "hf-from-pretrained"
    summary: ClassVar[str] = 'from_pretrained: flash_attention_2 -> "sdpa", CUDA device_map -> "neuron", 8/4-bit loading -> marker'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = (
        '="flash_attention', "='flash_attention", 'device_map="cuda', "device_map='cuda", "device_map={",
        "load_in_8bit", "load_in_4bit", "quantization_config=",
    )

    @classmethod
    def triggered_by(cls, text: str) -> bool:
        # Library code mentions these settings everywhere; only a from_pretrained call can change.
        return "from_pretrained(" in text and super().triggered_by(text)
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN812": 'from_pretrained: CUDA device_map -> "neuron"',
        "NRN813": "from_pretrained: bitsandbytes 8/4-bit loading -> review marker",
    }
    order: ClassVar[int] = 82

    def visit_Call(self, node: cst.Call) -> None:
        if not model_from_pretrained(self, node):
            return
        self._attention(node)
        self._device_map(node)
        self._quantization(node)

    def _attention(self, call: cst.Call) -> None:
        arg = keyword(call, "attn_implementation")
        if arg is None or not isinstance(arg.value, cst.SimpleString):
            return
        value = string_value(arg.value)
        if value not in FLASH_ATTENTION:
            return
        self.replace(
            arg.value,
            lambda n: with_string_value(n, "sdpa"),  # type: ignore[arg-type]
            f'attn_implementation="{value}" -> "sdpa" (FlashAttention is CUDA-only; SDPA is decomposed by TorchNeuron)',
        )

    def _device_map(self, call: cst.Call) -> None:
        arg = keyword(call, "device_map")
        if arg is None:
            return
        value = arg.value
        if isinstance(value, cst.SimpleString):
            self._cuda_string(value, "device_map")
            return
        if isinstance(value, cst.Dict) and len(value.elements) == 1:
            element = value.elements[0]
            if isinstance(element, cst.DictElement) and string_value(element.key) == "":
                self._whole_model(value, element.value)

    def _cuda_string(self, node: cst.SimpleString, where: str) -> bool:
        old = string_value(node) or ""
        found = _CUDA.match(old)
        if found is None:
            return False
        new = "neuron" + (f":{found.group('index')}" if found.group("index") else "")
        self.replace(node, lambda n: with_string_value(cast(cst.SimpleString, n), new), f'{where} "{old}" -> "{new}"', code="NRN812")
        return True

    def _whole_model(self, mapping: cst.Dict, device: cst.BaseExpression) -> None:
        """``{"": 0}`` / ``{"": "cuda:0"}`` / ``{"": rank}``: the whole model on one device."""
        if isinstance(device, cst.SimpleString):
            self._cuda_string(device, 'device_map {"": ...}')
            return
        if isinstance(device, cst.Integer):
            new = '"neuron"' if device.value == "0" else f'"neuron:{device.value}"'
            self.replace(mapping, cst.parse_expression(new), f'device_map {{"": {device.value}}} -> {new} (an int is a CUDA ordinal)', code="NRN812")
            return
        if self._integer_index(device):
            text = self.context.module.code_for_node(device)
            quote = "'" if '"' in text else '"'
            self.replace(
                device,
                cst.parse_expression(f"f{quote}neuron:{{{text}}}{quote}"),
                f'device_map {{"": {text}}} -> {{"": f"neuron:{{{text}}}"}} (an int is a CUDA ordinal)',
                code="NRN812",
                safety=Safety.REVIEW,
            )

    def _integer_index(self, node: cst.BaseExpression) -> bool:
        """A local rank / process index: ``local_rank``, ``state.process_index``, ``int(os.environ[...])``."""
        if isinstance(node, cst.Call):
            return isinstance(node.func, cst.Name) and node.func.value == "int"
        text = dotted(node)
        last = text.split(".")[-1] if text else ""
        return bool(INT_DEVICE_NAME.match(last)) or last in {"process_index", "local_process_index"}

    def _quantization(self, call: cst.Call) -> None:
        for name in _QUANTIZED:
            arg = keyword(call, name)
            if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
                self.mark(call, f"{name}: bitsandbytes quantization is CUDA-only; load in bfloat16 (dtype=torch.bfloat16)", code="NRN813")
                return
        arg = keyword(call, "quantization_config")
        if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            return
        if isinstance(arg.value, cst.Call) and self.qualified(arg.value.func) & _BNB_CONFIGS:
            return  # NRN905 marks the BitsAndBytesConfig(...) call on this statement
        self.mark(call, "quantization_config: bitsandbytes/GPTQ/AWQ kernels are CUDA-only; check the config, load in bfloat16", code="NRN813")
