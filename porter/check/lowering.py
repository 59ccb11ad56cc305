"""Lowering AOTAutograd graphs to StableHLO with upstream torch-mlir, the way TorchNeuron's front end does.

TorchNeuron imports each AOT graph with (a fork of) torch-mlir's FX importer and lowers it to
StableHLO before neuronx-cc. Upstream torch-mlir 20261001 is the closest public stand-in; the
decompositions and FX passes here close the gaps measured in DESIGN.md (pooling backward, pooling with
default stride, None outputs of backward graphs). SDPA's math path is forced by the backend.

Imports torch and torch_mlir: use only inside the harness subprocess or in tests.
"""

from __future__ import annotations

import copy
import operator
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.fx as tfx

aten = torch.ops.aten

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_PORTER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _max_pool2d_with_indices_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    indices: torch.Tensor,
) -> torch.Tensor:
    """Scatter-add each output gradient to the input position its max came from.

    Upstream torch-mlir has no StableHLO lowering for ``max_pool2d_with_indices_backward``; the
    indices are flat offsets into each (N, C) plane, so one ``scatter_add`` over the flattened plane
    is the exact gradient (overlapping windows accumulate, as in ATen).
    """
    batched = self.dim() == 4
    n = self.shape[0] if batched else 1
    c = self.shape[-3]
    plane = self.shape[-2] * self.shape[-1]
    flat = torch.zeros((n, c, plane), dtype=grad_output.dtype, device=grad_output.device)
    flat = flat.scatter_add(2, indices.reshape(n, c, -1), grad_output.reshape(n, c, -1))
    return flat.reshape(self.shape)


def _conv1d_backward(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    bias_sizes: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: bool,
    output_padding: Any,
    groups: int,
    output_mask: Any,
) -> Any:
    """Conv1d backward as Conv2d backward over a height-1 plane.

    Upstream torch-mlir lowers the 2-D ``convolution_backward`` but not the 1-D one; a 1-D
    convolution is exactly a 2-D one with kernel height 1. Other forms (2-D, transposed) return
    ``NotImplemented`` so tracing keeps the op as it is.
    """
    if input.dim() != 3 or transposed:
        return NotImplemented
    grad_input, grad_weight, grad_bias = aten.convolution_backward.default(
        grad_output.unsqueeze(2), input.unsqueeze(2), weight.unsqueeze(2), bias_sizes,
        [1, *stride], [0, *padding], [1, *dilation], False, [0, *output_padding], groups, output_mask,
    )
    return (
        grad_input.squeeze(2) if grad_input is not None else None,
        grad_weight.squeeze(2) if grad_weight is not None else None,
        grad_bias,
    )


def _avg_pool2d_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Any,
) -> Any:
    """AvgPool2d backward for non-overlapping windows without padding (``AvgPool2d(k)``, the
    common form): each input cell gets its window's gradient divided by the window size.

    Upstream torch-mlir has no StableHLO lowering for ``avg_pool2d_backward``. Overlapping,
    padded or ceil-mode pooling returns ``NotImplemented`` (stays a known gap).
    """
    kh, kw = (list(kernel_size) * 2)[:2] if len(kernel_size) == 1 else list(kernel_size)[:2]
    sh, sw = (kh, kw) if not stride else ((list(stride) * 2)[:2] if len(stride) == 1 else list(stride)[:2])
    if (sh, sw) != (kh, kw) or any(padding) or ceil_mode:
        return NotImplemented
    divisor = divisor_override or kh * kw
    spread = grad_output.repeat_interleave(kh, dim=-2).repeat_interleave(kw, dim=-1) / divisor
    h, w = self.shape[-2], self.shape[-1]
    pad_h, pad_w = h - spread.shape[-2], w - spread.shape[-1]
    if pad_h or pad_w:  # rows/columns no window covered get no gradient
        spread = torch.nn.functional.pad(spread, (0, pad_w, 0, pad_h))
    return spread


def _normal(mean: Any, std: Any, *, generator: Any = None) -> Any:
    """``torch.normal`` with a tensor mean or std as ``randn * std + mean``.

    Upstream torch-mlir has no StableHLO lowering for ``aten.normal`` (torch.distributions'
    ``Normal.sample``); TorchNeuron legalises random ops in its own front end. ATen computes the same
    thing the same way (standard normal samples of the broadcast shape, then ``mul_(std).add_(mean)``),
    so the global generator hands out the same numbers as in eager. A call with its own generator
    stays as it is.
    """
    if generator is not None:
        return NotImplemented
    like = mean if isinstance(mean, torch.Tensor) else std
    shape = torch.broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, torch.Tensor)))
    samples = aten.randn.default(list(shape), dtype=like.dtype, device=like.device)
    return samples * std + mean


EXTRA_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten.normal.Tensor_Tensor: _normal,
    aten.normal.Tensor_float: _normal,
    aten.normal.float_Tensor: _normal,
    aten.avg_pool2d_backward.default: _avg_pool2d_backward,
    aten.max_pool2d_with_indices_backward.default: _max_pool2d_with_indices_backward,
    aten.convolution_backward.default: _conv1d_backward,
}


# Foreach ops (tensordict's and torch.optim's multi-tensor paths) have no torch-mlir lowering and no
# decomposition in torch's table (inductor lowers them itself): each becomes its op once per tensor.
_FOREACH_POINTWISE = ("add", "sub", "mul", "div", "addcmul", "addcdiv", "lerp", "maximum", "minimum", "pow",
                      "sqrt", "exp", "log", "neg", "abs", "sign", "reciprocal", "sigmoid", "tanh", "clamp_min",
                      "clamp_max", "copy")


def _per_tensor(base: Any) -> Callable[..., Any]:
    """The foreach form of ``base`` (an OpOverloadPacket). A foreach schema passes positionally what
    the op takes as keyword-only (``_foreach_addcmul.Scalar(self[], t1[], t2[], value)``, ``addcmul(self,
    t1, t2, *, value)``): the extra positional arguments go to the op's keyword-only ones, in order."""
    schema = getattr(base, base.overloads()[0])._schema
    positional = [a.name for a in schema.arguments if not a.kwarg_only]
    keyword_only = [a.name for a in schema.arguments if a.kwarg_only]

    def run(*args: Any, **kwargs: Any) -> list[Any]:
        def pick(value: Any, i: int) -> Any:
            return value[i] if isinstance(value, (list, tuple)) else value

        head, extra = args[: len(positional)], args[len(positional):]
        named = {**dict(zip(keyword_only, extra)), **kwargs}
        return [base(*(pick(a, i) for a in head), **{k: pick(v, i) for k, v in named.items()}) for i in range(len(args[0]))]

    return run


def foreach_decompositions() -> dict[Any, Callable[..., Any]]:
    """``aten._foreach_<op>.<overload>`` -> ``aten.<op>`` per tensor (list arguments taken element by
    element, the others as they are). Not the ``Tensor`` scalars of addcmul/addcdiv (one value per
    tensor, read from a tensor) nor ``pow``'s scalar base."""
    table: dict[Any, Callable[..., Any]] = {}
    for name in _FOREACH_POINTWISE:
        packet, base = getattr(aten, f"_foreach_{name}", None), getattr(aten, name, None)
        if packet is None or base is None:
            continue
        for overload in packet.overloads():
            if overload.endswith("out") or overload == "ScalarAndTensor" or (overload == "Tensor" and name in ("addcmul", "addcdiv")):
                continue
            table[getattr(packet, overload)] = _per_tensor(base)
    norm = getattr(aten, "_foreach_norm", None)
    if norm is not None and "Scalar" in norm.overloads():
        table[norm.Scalar] = lambda tensors, ord=2, dtype=None: [aten.linalg_vector_norm(t, ord, dtype=dtype) for t in tensors]
    return table


def decomposition_table() -> dict[Any, Callable[..., Any]]:
    """torch-mlir's own FX decomposition table plus porter's extra decompositions."""
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    table = dict(get_decomposition_table())
    table.update(EXTRA_DECOMPOSITIONS)
    for op, decomposition in foreach_decompositions().items():
        table.setdefault(op, decomposition)
    return table


def normalize_pool_strides(gm: tfx.GraphModule) -> None:
    """Spell out pooling's default stride (= kernel size) in place.

    ATen passes ``stride=[]`` for "same as kernel"; torch-mlir's StableHLO lowering reads the empty
    list as stride 1 and then fails its own shape check (``reduce_window`` 7x7 vs 4x4).
    """
    changed = False
    for node in gm.graph.nodes:
        if node.target in (aten.max_pool2d_with_indices.default, aten.max_pool2d.default, aten.avg_pool2d.default):
            args = list(node.args)
            while len(args) < 3:
                args.append([])
            if not args[2]:
                args[2] = args[1]
                node.args = tuple(args)
                changed = True
        elif node.target in (aten.max_pool2d_with_indices_backward.default, aten.avg_pool2d_backward.default):
            args = list(node.args)
            if len(args) > 3 and not args[3]:
                args[3] = args[2]
                node.args = tuple(args)
                changed = True
    if changed:
        gm.recompile()


def copy_graph(gm: tfx.GraphModule) -> tfx.GraphModule:
    """A copy of ``gm`` whose graph can be rewritten, sharing ``gm``'s tensors (parameters, buffers,
    lifted constants) instead of copying them: the rewrites never write a tensor, and a deep copy of a
    real tensor made while AOTAutograd's fake mode is active (the backend compiles under it) goes
    through the fake kernels and fails ("set the storage of a tensor on device meta to a storage on
    different device cpu": torchrl's CQL loss, a constant lifted into its forward graph)."""
    memo: dict[int, Any] = {}
    for module in gm.modules():
        for values in (module.__dict__, module._parameters, module._buffers):
            for value in values.values():
                if isinstance(value, torch.Tensor):
                    memo[id(value)] = value
    return copy.deepcopy(gm, memo)


def strip_none_outputs(gm: tfx.GraphModule) -> tfx.GraphModule:
    """A copy of ``gm`` without ``None`` outputs (backward graphs return None for inputs that need
    no gradient; the importer fails on ``!torch.none``). The caller runs the original graph."""
    stripped = copy_graph(gm)
    out = stripped.graph.output_node()
    values = out.args[0]
    if isinstance(values, (list, tuple)) and any(v is None for v in values):
        out.args = (tuple(v for v in values if v is not None),)
        stripped.recompile()
    return stripped


@dataclass(frozen=True)
class Lowered:
    ok: bool
    text: str = ""
    error: str = ""
    exceeded: str | None = None  # "memory" | "time": the lowering hit its budget (not verified)


# The lowering step's budget: address space above what the process already maps, and wall time.
MEMORY_BUDGET_MB = int(os.environ.get("PORTER_CHECK_LOWERING_MEMORY_MB", "4096"))
TIME_BUDGET_S = float(os.environ.get("PORTER_CHECK_LOWERING_TIMEOUT_S", "120"))


def _mapped_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def lower_bounded(gm: tfx.GraphModule, memory_mb: int | None = None, timeout_s: float | None = None) -> Lowered:
    """``lower(gm)`` in a forked child under ``RLIMIT_AS`` and a wall-clock timeout.

    A lowering that grows without bound (upstream torch-mlir on some graphs) then ends the child,
    never the run: the result says which budget it exceeded. Without ``fork`` (not Linux), the
    lowering runs in this process, unbounded.
    """
    import json
    import resource
    import select
    import signal

    if not hasattr(os, "fork") or not os.path.exists("/proc/self/status"):
        return lower(gm)
    memory = (MEMORY_BUDGET_MB if memory_mb is None else memory_mb) * 2**20
    timeout = TIME_BUDGET_S if timeout_s is None else timeout_s
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: lower, write the result, leave without any teardown
        code = 0
        try:
            os.close(read_end)
            limit = _mapped_bytes() + memory
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            try:
                result = lower(gm)
                payload = {"ok": result.ok, "text": result.text, "error": result.error}
            except MemoryError:
                payload = {"ok": False, "error": "MemoryError", "exceeded": "memory"}
            if result.exceeded:
                payload["exceeded"] = result.exceeded
            data = json.dumps(payload).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
        except BaseException:  # noqa: BLE001 - the child must never return into the harness
            code = 3
        finally:
            os._exit(code)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_end, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    budget = f"{memory // 2**20} MB above the process, {timeout:g} s"
    if timed_out:
        return Lowered(False, error=f"lowering exceeded its time budget ({budget})", exceeded="time")
    try:
        payload = json.loads(b"".join(chunks).decode())
    except ValueError:
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit status {os.WEXITSTATUS(status)}"
        return Lowered(False, error=f"lowering ended by {how} under its memory budget ({budget})", exceeded="memory")
    if payload.get("exceeded"):
        return Lowered(False, error=f"lowering exceeded its memory budget ({budget}): {payload['error'][:300]}", exceeded="memory")
    return Lowered(bool(payload["ok"]), text=payload.get("text", ""), error=payload.get("error", ""))


def lower(gm: tfx.GraphModule) -> Lowered:
    """Import ``gm`` with torch-mlir and lower it to StableHLO; never raises."""
    from torch_mlir import fx

    try:
        module = fx.stateless_fx_import(gm, output_type="stablehlo")
        return Lowered(True, text=str(module))
    except Exception as error:  # torch-mlir raises many types; any of them is "did not lower"
        # a refused allocation inside MLIR comes back as "python exception: std::bad_alloc"
        out_of_memory = isinstance(error, MemoryError) or "bad_alloc" in str(error)
        return Lowered(False, error=_short_error(error), exceeded="memory" if out_of_memory else None)


def _short_error(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    keep = [ln for ln in lines if "error:" in ln or "failed" in ln.lower()]
    return "\n".join((keep or lines)[:6])[:1500]


def returned_input_mutations(gm: tfx.GraphModule) -> None:
    """Turn ``aten.copy_(input, new_value)`` into an extra output ``new_value``, in place.

    With ``keep_inference_input_mutations=True`` (TorchNeuron's setting) AOTAutograd leaves buffer
    updates, e.g. BatchNorm's running statistics, as ``copy_`` into graph inputs; upstream
    torch-mlir's importer rejects the in-place op. A returned new value is the functional form the
    importer takes, and it is what a compiler does with the mutation anyway.
    """
    placeholders = {n for n in gm.graph.nodes if n.op == "placeholder"}
    copies = [
        n for n in gm.graph.nodes
        if n.op == "call_function" and n.target is aten.copy_.default and n.args and n.args[0] in placeholders
    ]
    if not copies:
        return
    out = gm.graph.output_node()
    values = out.args[0]
    extra = []
    for node in copies:
        source = node.args[1]
        node.replace_all_uses_with(source)
        gm.graph.erase_node(node)
        extra.append(source)
    values = tuple(values) if isinstance(values, (list, tuple)) else (values,)
    out.args = (values + tuple(extra),)
    gm.recompile()


# (op, index of the tensor whose dim is sliced, index of dim, index of start, index of end)
_SLICES = {
    aten.slice.Tensor: (0, 1, 2, 3),
    aten.slice_scatter.default: (0, 2, 3, 4),
}
_SLICE_DEFAULTS = (0, None, None)


def clamp_slice_ends(gm: tfx.GraphModule) -> int:
    """Clamp ``slice``/``slice_scatter`` bounds past the sliced dimension to its size, in place.

    ``x[:, n:, :]`` records its end as INT64_MAX; its backward is a ``slice_scatter`` with that
    end, and upstream torch-mlir's StableHLO lowering of it grew past 17 GB (and 2.4 GB then a
    failure under a 6 GB cap, measured here). Python slicing clamps the same bounds, so the
    clamped op is the same op. Returns how many bounds were clamped.
    """
    clamped = 0
    for node in gm.graph.nodes:
        spec = _SLICES.get(node.target) if node.op == "call_function" else None
        if spec is None:
            continue
        source, dim_at, start_at, end_at = spec
        args = list(node.args)
        value = args[source].meta.get("val") if isinstance(args[source], tfx.Node) else None
        if not isinstance(value, torch.Tensor):
            continue
        while len(args) <= end_at:
            args.append(_SLICE_DEFAULTS[len(args) - dim_at])
        dim = args[dim_at] if isinstance(args[dim_at], int) else 0
        size = value.shape[dim]
        if not isinstance(size, int):
            continue  # a symbolic size: reported as such, nothing to clamp against
        for at in (start_at, end_at):
            bound = args[at]
            if isinstance(bound, int) and bound > size:
                args[at] = size
                clamped += 1
        node.args = tuple(args)
    if clamped:
        gm.recompile()
    return clamped


def split_fma(gm: tfx.GraphModule) -> int:
    """``prims.fma(a, b, c)`` -> ``add(mul(a, b), c)`` in place; returns how many were split.

    Dynamo itself writes ``addcmul_``/``addcdiv_``/``add_`` with a tensor ``value``/``alpha`` as
    ``torch._inductor.inductor_prims.fma`` (torch/_dynamo/variables/tensor.py, with
    ``enable_dynamo_decompositions``, on by default), so every backend gets it, an optimizer step
    compiled with the model among them (torch.optim.Adam's ``addcmul_``). Upstream torch-mlir has
    no lowering for it; its reference is ``(a * b) + c`` (inductor_prims.py), which StableHLO
    spells as a multiply and an add (it has no fused op). What TorchNeuron's fork does with it is
    not known here.
    """
    target = getattr(getattr(torch.ops, "prims", None), "fma", None)
    split = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or target is None or node.target not in (target, getattr(target, "default", None)):
            continue
        a, b, c = node.args[:3]
        with gm.graph.inserting_before(node):
            product = gm.graph.call_function(aten.mul.Tensor, (a, b))
            total = gm.graph.call_function(aten.add.Tensor, (product, c))
        total.meta = dict(node.meta)
        if "val" in node.meta:
            product.meta["val"] = node.meta["val"]
        node.replace_all_uses_with(total)
        gm.graph.erase_node(node)
        split += 1
    if split:
        gm.recompile()
    return split


def prepare(gm: tfx.GraphModule) -> tfx.GraphModule:
    """The graph as the importer should see it: None outputs stripped, pool strides spelled out,
    input mutations returned instead of copied in place, slice bounds clamped, Dynamo's fma split.
    Always a copy: the caller runs ``gm``."""
    ready = strip_none_outputs(gm)
    if ready is gm:
        ready = copy_graph(gm)
    normalize_pool_strides(ready)
    returned_input_mutations(ready)
    clamp_slice_ends(ready)
    split_fma(ready)
    return ready


def op_name(target: Any) -> str:
    """``aten.convolution_backward.default`` -> ``aten.convolution_backward``."""
    if isinstance(target, torch._ops.OpOverload):
        ns = target.namespace
        return f"{ns}.{target._schema.name.split('::', 1)[-1]}"
    return getattr(target, "__name__", str(target))


def single_op_module(node: tfx.Node) -> tfx.GraphModule:
    """A graph holding just ``node``: its tensor arguments become inputs (with their fake values)."""
    graph = tfx.Graph()
    env: dict[tfx.Node, tfx.Node] = {}

    def as_input(arg: Any) -> Any:
        if isinstance(arg, tfx.Node):
            if arg not in env:
                placeholder = graph.placeholder(f"in{len(env)}")
                placeholder.meta["val"] = arg.meta.get("val")
                env[arg] = placeholder
            return env[arg]
        return arg

    args = tfx.node.map_aggregate(node.args, as_input)
    kwargs = tfx.node.map_aggregate(node.kwargs, as_input)
    # failing_nodes passes only call_function nodes, whose target is the (callable) op.
    call = graph.call_function(cast(Callable[..., Any], node.target), tuple(args), dict(kwargs))
    call.meta["val"] = node.meta.get("val")
    value = node.meta.get("val")
    if isinstance(value, (list, tuple)):
        outs = []
        for i, item in enumerate(value):
            if isinstance(item, torch.Tensor):
                getter = graph.call_function(operator.getitem, (call, i))
                getter.meta["val"] = item
                outs.append(getter)
        graph.output(tuple(outs))
    else:
        graph.output((call,))
    return tfx.GraphModule(torch.nn.Module(), graph)


def failing_nodes(gm: tfx.GraphModule, exceeded_only: bool = False) -> list[tuple[tfx.Node, str]]:
    """Every ATen node that does not lower on its own (one check per distinct op and signature),
    each under the lowering budget; ``exceeded_only``: those whose lowering exceeded it."""
    failures: list[tuple[tfx.Node, str]] = []
    seen: dict[str, Lowered] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        if not all(isinstance(n.meta.get("val"), (torch.Tensor, int, float, bool)) or n.meta.get("val") is None for n in node.all_input_nodes):
            continue
        key = f"{node.target}|{_signature(node)}"
        if key not in seen:
            try:
                one = single_op_module(node)
            except Exception:  # building the one-op graph failed: cannot judge this node alone
                seen[key] = Lowered(True)
            else:
                seen[key] = lower_bounded(one)
        if not seen[key].ok and (seen[key].exceeded or not exceeded_only):
            failures.append((node, seen[key].error))
    return failures


def _signature(node: tfx.Node) -> str:
    parts = []
    for arg in node.args:
        value = arg.meta.get("val") if isinstance(arg, tfx.Node) else arg
        parts.append(str(tuple(value.shape)) + str(value.dtype) if isinstance(value, torch.Tensor) else repr(value))
    return ",".join(parts)


_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def node_location(node: tfx.Node) -> tuple[str | None, int | None]:
    """The innermost user frame (outside torch and porter) of the node's recorded stack trace."""
    stack = node.meta.get("stack_trace") or ""
    best: tuple[str | None, int | None] = (None, None)
    for file, line in _FILE_LINE.findall(stack):
        if not file.startswith((_TORCH_DIR, _PORTER_DIR)):
            best = (file, int(line))
    return best


def module_path(node: tfx.Node) -> str | None:
    """The submodule the node came from (``encoder.layers.0.attn``), from Dynamo's nn_module_stack."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    path, _type = list(stack.values())[-1]
    return re.sub(r"^L\['self'\]\.?|^L__self___?", "", str(path)) or "<root>"
