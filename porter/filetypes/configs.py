"""Training configs in YAML, JSON and TOML: Accelerate, DeepSpeed, and keys named like a device.

The document is parsed into a span-carrying tree (``_tree.Node``); the port looks at every
mapping and edits single scalars or keys in place. Markers are comments above the key's line
in YAML and TOML; JSON has no comments, so there a finding is reported (a review ``Change``
with kind ``marker``) and the file is not touched for it.
"""

from __future__ import annotations

import re

from porter.engine.changes import Kind, Safety
from porter.filetypes._doc import Doc
from porter.filetypes._tree import Node, walk_maps
from porter.filetypes.shell import CORES_NOTE

_CUDA_DEVICE = re.compile(r"^cuda(:\d+)?$")
_BACKEND_KEYS = frozenset({"dist_backend", "backend", "distributed_backend", "process_group_backend", "pg_backend", "comm_backend"})
_PRECISION = {
    "16": "bf16-mixed",
    "16-mixed": "bf16-mixed",
    "16-true": "bf16-true",
    "fp16": "bf16",
    "float16": "bfloat16",
    "half": "bfloat16",
    "fp16-mixed": "bf16-mixed",
}
_DTYPE_KEYS = frozenset(
    {"dtype", "torch_dtype", "amp_dtype", "autocast_dtype", "compute_dtype", "param_dtype", "reduce_dtype",
     "buffer_dtype", "mixed_precision_dtype", "communication_data_type", "model_dtype", "train_dtype"}
)
_DTYPE = {"float16": "bfloat16", "fp16": "bf16", "half": "bfloat16", "torch.float16": "torch.bfloat16", "torch.half": "torch.bfloat16"}
_FP16_FLAGS = {"fp16": "bf16", "use_fp16": "use_bf16", "fp16_enabled": "bf16_enabled"}
_ACCELERATE_KEYS = frozenset({"compute_environment", "distributed_type"})
# DeepSpeed dtypes that follow the config's own fp16/bf16 section (top level, or data_types.*):
# one precision story per config, never bf16 collectives next to a kept fp16 section.
_FOLLOWING_KEYS = frozenset({"communication_data_type", "seq_parallel_communication_data_type", "grad_accum_dtype"})
_SECTIONS = ("fp16", "bf16", "bfloat16")
_JSON_NOTE = "not written (JSON has no comments): "


class ConfigPort:
    """The port of one parsed document (``fmt``: ``yaml``, ``json`` or ``toml``)."""

    def __init__(self, doc: Doc, fmt: str) -> None:
        self.doc = doc
        self.fmt = fmt

    # ------------------------------------------------------------ writing
    def raw(self, node: Node) -> str:
        return self.doc.body(node.start[0])[node.start[1] : node.end[1]]

    def text_for(self, node: Node, new: object) -> str:
        if isinstance(new, bool):
            word = "true" if new else "false"
            return word.capitalize() if self.fmt == "yaml" and self.raw(node)[:1].isupper() else word
        if node.style in ('"', "'"):
            return f"{node.style}{new}{node.style}"
        return str(new) if self.fmt == "yaml" else f'"{new}"'

    def editable(self, node: Node) -> bool:
        return node.kind == "scalar" and node.single_line and node.style in ("", '"', "'")

    def set_value(self, node: Node, new: object, code: str, message: str | None, safety: Safety) -> bool:
        if not self.editable(node):
            return False
        line, start = node.start
        return self.doc.replace_span(line, start, node.end[1], self.text_for(node, new), code, message, safety)

    def rename_key(self, key: Node, new: str, code: str, message: str | None, safety: Safety) -> bool:
        if not self.editable(key):
            return False
        line, start = key.start
        text = f"{key.style}{new}{key.style}" if key.style else new  # a bare key stays bare
        return self.doc.replace_span(line, start, key.end[1], text, code, message, safety)

    def mark(self, key: Node, code: str, message: str) -> None:
        line, column = key.start
        if self.fmt == "json":
            if self.doc.wants(code):
                self.doc.record(line, column, code, _JSON_NOTE + message, Safety.REVIEW, Kind.MARKER)
            return
        self.doc.mark(line, code, message, column=column)

    # ------------------------------------------------------------ rules
    def run(self, roots: list[Node]) -> None:
        for root in roots:
            accelerate = root.kind == "map" and bool(_ACCELERATE_KEYS & set(root.keys()))
            self._story: dict[int, str] = {}  # a config's precision after its fp16 block's port
            maps: dict[tuple[str, ...], Node] = {}
            following: list[tuple[Node, Node, Node]] = []
            for path, mapping in walk_maps(root):
                maps[path] = mapping
                holder = _section_holder(maps, path)
                for key, value in mapping.items:
                    if holder is not None and str(key.value).lower() in _FOLLOWING_KEYS:
                        following.append((holder, key, value))  # after the section's own port
                    else:
                        self.entry(mapping, key, value)
                if accelerate and not path:
                    self.accelerate(mapping)
            for holder, key, value in following:
                self.following_dtype(holder, key, value)

    def entry(self, mapping: Node, key: Node, value: Node) -> None:
        name = str(key.value)
        lower = name.lower()
        scalar = value.value if value.kind == "scalar" else None
        text = str(scalar).strip().lower() if scalar is not None and not isinstance(scalar, bool) else ""
        if (lower in ("device", "device_type") or lower.endswith("_device")) and isinstance(scalar, str):
            match = _CUDA_DEVICE.match(scalar.strip())
            if match:
                new = "neuron" + (match.group(1) or "")
                self.set_value(value, new, "NRN194", f"{name}: {scalar} -> {new}", Safety.SAFE)
        elif lower == "accelerator" and text in ("gpu", "cuda"):
            self.mark(key, "NRN195", f"accelerator: {scalar} selects CUDA GPUs; use the Neuron device your framework supports")
        elif (lower in _BACKEND_KEYS or lower.endswith("_backend")) and text == "nccl":
            if lower == "ddp_backend":
                self.mark(key, "NRN393", "ddp_backend nccl is CUDA-only; the process group on Trainium is 'neuron' (check your transformers accepts it, else remove the key)")
            else:
                self.set_value(value, "neuron", "NRN393", f"{name}: nccl -> neuron (the TorchNeuron process group)", Safety.SAFE)
        elif lower == "mixed_precision" and text == "fp16":
            self.set_value(value, "bf16", "NRN290", f"{name}: fp16 -> bf16 (bf16 needs no loss scaling on Trainium)", Safety.REVIEW)
        elif (lower == "precision" or lower.endswith("_precision")) and text in _PRECISION and not isinstance(scalar, float):
            new = _PRECISION[text]
            self.set_value(value, new, "NRN292", f"{name}: {scalar} -> {new} (bf16 mixed precision on Trainium)", Safety.REVIEW)
        elif lower in _DTYPE_KEYS and text in _DTYPE:
            self.set_value(value, _DTYPE[text], "NRN292", f"{name}: {scalar} -> {_DTYPE[text]}", Safety.REVIEW)
        elif lower in _FP16_FLAGS and scalar is True:
            self.fp16_flag(mapping, key, value)
        elif lower == "fp16" and value.kind == "map":
            self.fp16_block(mapping, key, value)
        elif lower == "amp" and value.kind == "map" and _true(value.get("enabled")):
            self.mark(key, "NRN293", "DeepSpeed amp is apex (CUDA-only); use the bf16 block instead")
        elif name == "CUDA_VISIBLE_DEVICES":
            self.rename_key(key, "NEURON_RT_VISIBLE_CORES", "NRN191",
                            "CUDA_VISIBLE_DEVICES -> NEURON_RT_VISIBLE_CORES: the values now pick NeuronCores", Safety.REVIEW)
        elif name.startswith("NCCL_"):
            self.mark(key, "NRN392", f"{name} is not read on Trainium: collectives use the neuron process group")

    def fp16_flag(self, mapping: Node, key: Node, value: Node) -> None:
        """``fp16: true`` (TrainingArguments style) -> ``bf16: true``."""
        name = str(key.value)
        partner = _FP16_FLAGS[name.lower()]
        sibling = mapping.get(partner)
        message = f"{name}: true -> {partner}: true (bf16 needs no loss scaling on Trainium)"
        if sibling is None:
            self.rename_key(key, partner, "NRN291", message, Safety.REVIEW)
        elif sibling.kind == "scalar" and sibling.value is False and self.editable(sibling):
            if self.set_value(value, False, "NRN291", message, Safety.REVIEW):
                self.set_value(sibling, True, "NRN291", None, Safety.REVIEW)

    def following_dtype(self, holder: Node, key: Node, value: Node) -> None:
        """``communication_data_type`` & co. in a DeepSpeed config with an fp16/bf16 section: bf16
        when the section ends up bf16, kept (marked) while an fp16 section stays fp16 or "auto"."""
        name = str(key.value)
        text = str(value.value).strip().lower() if value.kind == "scalar" and isinstance(value.value, str) else ""
        if text not in _DTYPE:
            return
        story = self._story.get(id(holder)) or _static_story(holder)
        new = _DTYPE[text]
        if story == "bf16":
            self.set_value(value, new, "NRN292", f"{name}: {value.value} -> {new} (follows the config's bf16 section)", Safety.REVIEW)
        elif story in ("fp16", "auto"):
            section = "stays fp16" if story == "fp16" else 'is "auto" (TrainingArguments decide)'
            self.mark(key, "NRN292", f"{name} {value.value} kept: the config's fp16 section {section}; on Trainium switch both to bf16")
        elif name.lower() in _DTYPE_KEYS:  # no reduced precision section enabled: a dtype key as any other
            self.set_value(value, new, "NRN292", f"{name}: {value.value} -> {new}", Safety.REVIEW)

    def fp16_block(self, mapping: Node, key: Node, block: Node) -> None:
        """DeepSpeed ``"fp16": {"enabled": true, ...}`` -> bf16 (``"auto"`` is left to TrainingArguments)."""
        self._story[id(mapping)] = "fp16"  # until a switch below is written
        enabled = block.get("enabled")
        if enabled is None or not _true(enabled):
            self._story.pop(id(mapping))
            return
        message = "fp16 -> bf16: DeepSpeed bf16 needs no loss scaling (review the loss-scale settings)"
        bf16 = mapping.get("bf16") or mapping.get("bfloat16")
        if bf16 is not None:
            other = bf16.get("enabled") if bf16.kind == "map" else None
            if other is not None and other.kind == "scalar" and not _true(other) and self.editable(other):
                if self.set_value(enabled, False, "NRN291", message, Safety.REVIEW):
                    self.set_value(other, True, "NRN291", None, Safety.REVIEW)
                    self._story[id(mapping)] = "bf16"
            else:
                self.mark(key, "NRN291", "fp16 and bf16 blocks both set: enable bf16 only")
            return
        if set(block.keys()) == {"enabled"}:
            if self.rename_key(key, "bf16", "NRN291", message, Safety.REVIEW):
                self._story[id(mapping)] = "bf16"
            return
        if self.insert_bf16_block(key, block, message):
            self._story[id(mapping)] = "bf16"

    def insert_bf16_block(self, key: Node, block: Node, message: str) -> bool:
        """Keep the fp16 block (its loss-scale keys would be rejected under bf16), disabled; add bf16
        before it. True when written."""
        doc = self.doc
        line, column = key.start
        if doc.body(line)[:column].strip() or not doc.wants("NRN291") or doc.touched(line) or self.fmt == "toml":
            self.mark(key, "NRN291", "switch fp16 to bf16: add a bf16 block with enabled true and disable this one")
            return False
        indent = doc.body(line)[:column]
        enabled = block.get("enabled")
        enabled_key = block.key_node("enabled")
        if enabled is None or enabled_key is None:
            return False
        if self.fmt == "json":
            quote = '"' if key.style != "'" else "'"
            new = [f'{indent}{quote}bf16{quote}: {{{quote}enabled{quote}: true}},']
        else:
            if block.flow or enabled_key.start[0] == line:
                self.mark(key, "NRN291", "switch fp16 to bf16: add a bf16 block with enabled true and disable this one")
                return False
            step = " " * max(enabled_key.start[1] - column, 1)
            new = [f"{indent}bf16:", f"{indent}{step}enabled: true"]
        if self.set_value(enabled, False, "NRN291", message, Safety.REVIEW):
            doc.insert_before(line, new)
            return True
        return False

    def accelerate(self, root: Node) -> None:
        """Top-level keys of an Accelerate config (``accelerate config`` output)."""
        distributed = root.get("distributed_type")
        if distributed is not None and str(distributed.value).upper() == "MULTI_GPU":
            self.mark(
                root.key_node("distributed_type") or distributed,
                "NRN394",
                "MULTI_GPU: check your accelerate release supports Neuron (older ones init nccl; the backend must be 'neuron')",
            )
        gpu_ids = root.get("gpu_ids")
        if gpu_ids is not None and gpu_ids.value not in (None, "all") and gpu_ids.kind == "scalar":
            self.mark(root.key_node("gpu_ids") or gpu_ids, "NRN191",
                      "gpu_ids sets CUDA_VISIBLE_DEVICES, ignored on Trainium: pick cores with NEURON_RT_VISIBLE_CORES")
        processes = root.get("num_processes")
        neuron = "neuron" in self.doc.text.lower()
        if not neuron and processes is not None and isinstance(processes.value, int) and not isinstance(processes.value, bool) and processes.value > 1:
            self.mark(root.key_node("num_processes") or processes, "NRN391", f"num_processes: {processes.value} counts GPUs: {CORES_NOTE}")
        dynamo = root.get("dynamo_config")
        backend = dynamo.get("dynamo_backend") if dynamo is not None and dynamo.kind == "map" else root.get("dynamo_backend")
        if backend is not None and str(backend.value).upper() not in ("NO", "NONE"):
            holder = dynamo if dynamo is not None and dynamo.kind == "map" else root
            self.mark(holder.key_node("dynamo_backend") or backend, "NRN195",
                      f"dynamo_backend {backend.value} is a CUDA/CPU backend: compile with torch.compile(backend=\"neuron\") in code")


def _section_holder(maps: dict[tuple[str, ...], Node], path: tuple[str, ...]) -> Node | None:
    """The nearest mapping (this one or an enclosing one) with an fp16/bf16 section of its own."""
    for end in range(len(path), -1, -1):
        mapping = maps.get(path[:end])
        sections = [mapping.get(name) for name in _SECTIONS] if mapping is not None else []
        if any(section is not None and section.kind == "map" for section in sections):
            return mapping
    return None


def _static_story(holder: Node) -> str | None:
    """The precision a config's sections say when the port did not switch them."""
    def enabled(name: str) -> Node | None:
        section = holder.get(name)
        return section.get("enabled") if section is not None and section.kind == "map" else None

    fp16 = enabled("fp16")
    if fp16 is not None and fp16.kind == "scalar" and str(fp16.value).lower() == "auto":
        return "auto"
    if _true(fp16):
        return "fp16"
    return "bf16" if _true(enabled("bf16")) or _true(enabled("bfloat16")) else None


def _true(node: Node | None) -> bool:
    return node is not None and node.kind == "scalar" and (node.value is True or str(node.value).lower() == "true")
