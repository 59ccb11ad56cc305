"""The Dynamo backend registered as ``neuron`` in the emulated target.

Mirrors TorchNeuron's compile path with upstream parts: AOTAutograd (forward and backward graphs,
torch-mlir's decompositions plus porter's) -> torch-mlir ``stateless_fx_import(output_type="stablehlo")``
for every graph -> then the AOT graph runs eagerly on the CPU so training continues. Symbolic sizes
are recorded (TorchNeuron rejects dynamic shapes even where torch-mlir would lower them).
neuronx-cc, NEFF generation and the Neuron runtime are not part of this: they do not exist here.
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx as tfx

from porter.check import gaps, lowering
from porter.check.harness.device_mode import dev_of, tag
from porter.check.harness.state import STATE, project_frame, quiet, stage, user_location

_counter = {"graph": 0}


class NeuronEmulatedBackend:
    """Callable Dynamo backend. ``dump_dir``: write FX / AOT / StableHLO text for every graph."""

    __name__ = "neuron"

    def __init__(self, dump_dir: str | None = None, bisect: bool = False, fallback: bool = True) -> None:
        self.dump_dir = dump_dir
        self.bisect = bisect
        self.fallback = fallback
        self._table: dict[Any, Any] | None = None
        self._shared: NeuronEmulatedBackend | None = None

    def with_fallback(self, fallback: bool) -> NeuronEmulatedBackend:
        """This backend for one ``torch.compile`` call: with fallback off (TorchNeuron's default),
        a graph that does not lower raises, as the device's compile does."""
        other = NeuronEmulatedBackend(self.dump_dir, self.bisect, fallback)
        other._shared = self
        return other

    @property
    def table(self) -> dict[Any, Any]:
        if self._shared is not None:
            return self._shared.table
        if self._table is None:
            self._table = lowering.decomposition_table()
        return self._table

    def __call__(self, gm: tfx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Callable[..., Any]:
        from torch._dynamo.backends.common import aot_autograd
        from torch.nn.attention import SDPBackend, sdpa_kernel

        compile_id = _compile_id()
        region = _region(gm)
        symbolic = _symbolic_inputs(gm, example_inputs)
        shapes = tuple(_shape(x) for x in example_inputs)
        mask_positions = [i for i, n in enumerate(_placeholders(gm)) if "attention_mask" in n]
        pad_ids = {} if mask_positions else _pad_id_comparisons(gm)
        if self.dump_dir:
            self._write(f"{_safe(compile_id)}_dynamo.fx.txt", gm.print_readable(print_output=False))
        # AOT graphs keep each op's stack trace but not its module: map one to the other here.
        modules = {
            node.meta["stack_trace"]: lowering.module_path(node) or "<root>"
            for node in gm.graph.nodes
            if node.meta.get("stack_trace")
        }
        # where the compiled code was called from (a symbolic-shape finding is named at that line)
        call_file, call_line = user_location()
        state = {"region": region, "compile_id": compile_id, "shapes": shapes, "symbolic": symbolic, "modules": modules,
                 "call": (call_file, call_line), "call_via": project_frame()}
        aot = aot_autograd(
            fw_compiler=self._compiler("forward", state),
            bw_compiler=self._compiler("backward", state),
            inference_compiler=self._compiler("inference", state),
            decompositions=self.table,
            keep_inference_input_mutations=True,
        )
        # TorchNeuron decomposes SDPA itself; on CPU the flash kernel's backward does not lower upstream.
        with sdpa_kernel([SDPBackend.MATH]):
            compiled = aot(gm, example_inputs)

        def run(*args: Any) -> Any:
            device = None
            for a in args:
                if isinstance(a, torch.Tensor) and dev_of(a) is not None:
                    device = dev_of(a)
                    break
            with quiet():
                for i in mask_positions:
                    if i < len(args) and isinstance(args[i], torch.Tensor):
                        STATE.tokens += args[i].numel()
                        STATE.padded_tokens += int((args[i] == 0).sum())
                        STATE.padding_sources.add("attention_mask")
                for i, pad_id in pad_ids.items():
                    if i < len(args) and isinstance(args[i], torch.Tensor):
                        STATE.tokens += args[i].numel()
                        STATE.padded_tokens += int((args[i] == pad_id).sum())
                        STATE.padding_sources.add(f"input_ids == {pad_id}")
                out = compiled(*args)
            if device is not None:
                _tag_all(out, device)
            return out

        return run

    def _compiler(self, kind: str, state: dict[str, Any]) -> Callable[..., Any]:
        def compile_graph(gm: tfx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
            from functorch.compile import make_boxed_func

            graph = self._record(kind, gm, example_inputs, state)
            if graph["status"] == "failed" and not self.fallback:
                ops = ", ".join(f"`{op['op']}`" + (f" at {os.path.basename(op['file'])}:{op['line']}" if op.get("file") else "")
                                for op in graph["failed_ops"])
                raise RuntimeError(
                    f"neuron backend: the {kind} graph of {graph['region']} did not compile ({ops} did not lower to "
                    "StableHLO; emulated with upstream torch-mlir). TorchNeuron raises here unless fallback is "
                    "enabled: TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 or torch.compile(..., "
                    "options={'fallback_execution': True})"
                )
            return make_boxed_func(gm.forward)

        return compile_graph

    def _record(self, kind: str, gm: tfx.GraphModule, example_inputs: Sequence[Any], state: dict[str, Any]) -> dict[str, Any]:
        _counter["graph"] += 1
        graph_id = _counter["graph"]
        stage(f"compiling graph {graph_id} ({kind}, {sum(1 for n in gm.graph.nodes if n.op == 'call_function')} ops)")
        ready = lowering.prepare(gm)
        result = lowering.lower_bounded(ready)
        failed_ops: list[dict[str, Any]] = []
        if not result.ok:
            for node, error in lowering.failing_nodes(ready, exceeded_only=result.exceeded is not None):
                file, line = lowering.node_location(node)
                failed_ops.append(
                    {
                        "op": lowering.op_name(node.target),
                        "error": error,
                        "file": file,
                        "line": line,
                        "module": (lowering.module_path(node) or state["modules"].get(node.meta.get("stack_trace"), "?"))
                        if self.bisect
                        else None,
                    }
                )
        if not result.ok and not failed_ops:
            failed_ops.append({"op": _op_from_error(result.error), "error": result.error, "file": None, "line": None, "module": None})
        if result.exceeded:
            # the lowering hit its budget: not verified (never the script's failure, never a pass)
            status = "unverified"
            if not failed_ops:
                failed_ops.append({"op": "<whole graph>", "error": result.error, "file": None, "line": None, "module": None})
        else:
            status = "lowered" if result.ok else ("unverified" if all(gaps.is_known_gap(f["op"]) for f in failed_ops) else "failed")
        STATE.graphs.append(
            {
                "graph_id": graph_id,
                "region": state["region"],
                "kind": kind,
                "compile_id": state["compile_id"],
                "step": STATE.steps,
                "nodes": sum(1 for n in gm.graph.nodes if n.op == "call_function"),
                "input_shapes": [_shape(x) for x in example_inputs],
                "dynamo_input_shapes": list(state["shapes"]),
                "symbolic": state["symbolic"],
                "call_file": state["call"][0],
                "call_line": state["call"][1],
                "call_via": state["call_via"],  # the script's own line, when the call is a library's
                "lowered": result.ok,
                "status": status,
                "error": None if result.ok else result.error,
                "failed_ops": failed_ops,
                "exceeded": result.exceeded,
            }
        )
        if self.dump_dir:
            stem = f"{_safe(state['compile_id'])}_{graph_id:03d}_{kind}"
            self._write(f"{stem}.aot.fx.txt", gm.print_readable(print_output=False))
            self._write(f"{stem}.stablehlo.mlir" if result.ok else f"{stem}.lowering-error.txt", result.text or result.error)
        return STATE.graphs[-1]

    def _write(self, name: str, text: str) -> None:
        assert self.dump_dir is not None
        os.makedirs(self.dump_dir, exist_ok=True)
        with open(os.path.join(self.dump_dir, name), "w", encoding="utf-8") as handle:
            handle.write(text)


def _tag_all(out: Any, device: str) -> None:
    if isinstance(out, torch.Tensor):
        if dev_of(out) is None:
            tag(out, device)
    elif isinstance(out, (list, tuple)):
        for item in out:
            _tag_all(item, device)
    elif isinstance(out, dict):
        for item in out.values():
            _tag_all(item, device)


def _compile_id() -> str:
    cid = torch._guards.CompileContext.current_compile_id()
    return str(cid) if cid is not None else "?"


def _placeholders(gm: tfx.GraphModule) -> list[str]:
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


_COMPARISONS = {operator.eq, operator.ne, torch.eq, torch.ne, "eq", "ne", "__eq__", "__ne__"}


def _pad_id_comparisons(gm: tfx.GraphModule) -> dict[int, int]:
    """Placeholder index -> pad id, for ``input_ids`` inputs the graph itself compares with an int
    constant (e.g. GPT-2 heads finding the last non-pad token with ``input_ids != pad_token_id``).
    Without an attention_mask that comparison is the only pad id the model shows; a graph that
    never makes one gets no padding count rather than a guessed pad id."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    found: dict[int, int] = {}
    for index, node in enumerate(placeholders):
        if "input_ids" not in node.name:
            continue
        for user in node.users:
            if user.op not in ("call_function", "call_method") or user.target not in _COMPARISONS:
                continue
            other = [a for a in user.args if a is not node]
            if len(other) == 1 and isinstance(other[0], int) and not isinstance(other[0], bool):
                found[index] = other[0]
                break
    return found


def _region(gm: tfx.GraphModule) -> str:
    """Name the compiled code region after the outermost user frame in the graph's stack traces
    (else the outermost frame at all: an ``nn.Sequential`` has only torch frames)."""
    first = None
    for node in gm.graph.nodes:
        stack = node.meta.get("stack_trace")
        if not stack:
            continue
        for file, _line, name in re.findall(r'File "([^"]+)", line (\d+), in (\S+)', stack):
            if first is None and not file.startswith(lowering._PORTER_DIR):
                first = f"{name} ({os.path.basename(file)})"
            if not file.startswith((lowering._TORCH_DIR, lowering._PORTER_DIR)):
                return f"{name} ({os.path.basename(file)})"
    if first and "external_utils" not in first:
        return first
    # A compiled nn.Module's graph holds only torch frames (or none): name it by the user's call.
    file, line = user_location()
    return f"compiled call at {os.path.basename(file)}:{line}"


def _shape(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return [d if isinstance(d, int) else str(d) for d in x.shape]
    if isinstance(x, torch.SymInt):
        return str(x)
    return type(x).__name__


def _symbolic_inputs(gm: tfx.GraphModule, example_inputs: Sequence[Any]) -> list[str]:
    found = []
    names = _placeholders(gm)
    for i, x in enumerate(example_inputs):
        name = names[i] if i < len(names) else f"input{i}"
        if isinstance(x, torch.SymInt):
            found.append(f"{name} = {x}")
        elif isinstance(x, torch.Tensor) and any(not isinstance(d, int) for d in x.shape):
            found.append(f"{name}: {[str(d) for d in x.shape]}")
    return found


def _op_from_error(error: str) -> str:
    match = re.search(r"'torch\.(aten\.[\w.]+|prims\.[\w.]+)'", error)
    if match:
        return match.group(1).replace(".default", "")
    match = re.search(r"failed to legalize operation '([\w.]+)'", error)
    return match.group(1) if match else "<unknown op>"


def _safe(text: str) -> str:
    return re.sub(r"[^\w.-]+", "_", text)
