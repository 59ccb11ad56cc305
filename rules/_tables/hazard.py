"""The data table behind the compile-hazard markers (NRN731-NRN740). No rule lives here.

Each entry: the code, the message of its review marker, and where it counts: ``"forward"`` (only
inside ``forward`` of an ``nn.Module`` subclass, where it breaks or re-shapes the compiled graph)
or ``"anywhere"`` (in any code of a ported file: the op falls back to the CPU wherever it runs).
Sources: AWS Neuron docs, about torch.compile (the static-shape contract), torch-neuronx examples/torch_compile/README.md (compile rules) and python_ops/cpu_fallback_registrations.py (explicit CPU fallbacks).
"""

from __future__ import annotations

from typing import NamedTuple


class Hazard(NamedTuple):
    code: str
    message: str
    where: str  # "forward" | "anywhere"


DATA_DEPENDENT_SHAPE = Hazard(
    "NRN733",
    "data-dependent shape (nonzero/boolean mask): recompiles per shape; use torch.where/masked_fill or nonzero_static",
    "forward",
)
UNIQUE = Hazard("NRN734", "torch.unique has a data-dependent shape: recompiles per shape; use a fixed-size alternative", "forward")
COMPLEX = Hazard(
    "NRN735",
    "complex tensors (torch.polar/view_as_complex RoPE) do not lower in torch-mlir: use real-valued RoPE (cos/sin)",
    "anywhere",
)
EXPAND = Hazard("NRN736", "expand() gives a zero-stride view; Neuron examples use repeat() (only contiguous tensors)", "forward")
SPARSE = Hazard("NRN737", "sparse tensors are not supported on Neuron: use dense tensors", "anywhere")
CHANNELS_LAST = Hazard("NRN738", "channels_last layout: Neuron supports only contiguous tensors; drop memory_format", "anywhere")
LINALG = Hazard("NRN739", "this linalg op falls back to the CPU on Neuron (a host round trip); keep it out of the step", "anywhere")
TOPK = Hazard("NRN740", "topk/histc-style op: the Neuron examples replace it with a static alternative (check get_fallback_ops)", "forward")
ITEM = Hazard("NRN732", ".item()/.tolist() in forward: a graph break and a host sync; keep the value a tensor", "forward")
CONTROL = Hazard(
    "NRN731",
    "control flow on tensor values in forward: a graph break or a recompile per branch; use torch.where",
    "forward",
)

# Fully qualified functions.
FUNCTIONS: dict[str, Hazard] = {
    "torch.nonzero": DATA_DEPENDENT_SHAPE,
    "torch.masked_select": DATA_DEPENDENT_SHAPE,
    "torch.argwhere": DATA_DEPENDENT_SHAPE,
    "torch.unique": UNIQUE,
    "torch.unique_consecutive": UNIQUE,
    "torch.polar": COMPLEX,
    "torch.view_as_complex": COMPLEX,
    "torch.complex": COMPLEX,
    "torch.sparse_coo_tensor": SPARSE,
    "torch.sparse_csr_tensor": SPARSE,
    "torch.sparse.mm": SPARSE,
    "torch.sparse.sum": SPARSE,
    "torch.sparse.softmax": SPARSE,
    "torch.linalg.qr": LINALG,
    "torch.linalg.svd": LINALG,
    "torch.linalg.svdvals": LINALG,
    "torch.linalg.eigh": LINALG,
    "torch.linalg.eigvalsh": LINALG,
    "torch.linalg.cholesky": LINALG,
    "torch.linalg.cholesky_ex": LINALG,
    "torch.linalg.inv": LINALG,
    "torch.linalg.inv_ex": LINALG,
    "torch.linalg.lu": LINALG,
    "torch.linalg.lu_factor": LINALG,
    "torch.linalg.lu_factor_ex": LINALG,
    "torch.linalg.ldl_factor": LINALG,
    "torch.linalg.det": LINALG,
    "torch.linalg.slogdet": LINALG,
    "torch.linalg.solve_triangular": LINALG,
    "torch.qr": LINALG,
    "torch.svd": LINALG,
    "torch.cholesky": LINALG,
    "torch.cholesky_inverse": LINALG,
    "torch.inverse": LINALG,
    "torch.det": LINALG,
    "torch.logdet": LINALG,
    "torch.slogdet": LINALG,
    "torch.triangular_solve": LINALG,
    "torch.topk": TOPK,
    "torch.histc": TOPK,
    "torch.bincount": TOPK,
}

# Tensor methods (no qualified name: matched by method name; see the rule's Safety section).
METHODS: dict[str, Hazard] = {
    "nonzero": DATA_DEPENDENT_SHAPE,
    "masked_select": DATA_DEPENDENT_SHAPE,
    "unique": UNIQUE,
    "unique_consecutive": UNIQUE,
    "to_sparse": SPARSE,
    "to_sparse_csr": SPARSE,
    "expand": EXPAND,
    "expand_as": EXPAND,
    "item": ITEM,
    "tolist": ITEM,
    "topk": TOPK,
    "histc": TOPK,
    "bincount": TOPK,
    "inverse": LINALG,
    "cholesky": LINALG,
    "det": LINALG,
    "qr": LINALG,
    "svd": LINALG,
}
# Methods whose name is too common outside tensors to mark outside forward.
FORWARD_ONLY_METHODS = frozenset({"inverse", "cholesky", "det", "qr", "svd"})

# Attributes (dtypes, layouts) that are hazards wherever they are written.
ATTRIBUTES: dict[str, Hazard] = {
    "torch.channels_last": CHANNELS_LAST,
    "torch.channels_last_3d": CHANNELS_LAST,
    "torch.complex64": COMPLEX,
    "torch.complex128": COMPLEX,
    "torch.cfloat": COMPLEX,
    "torch.cdouble": COMPLEX,
    "torch.sparse_coo": SPARSE,
    "torch.sparse_csr": SPARSE,
}

# Reductions whose value decides a branch: data-dependent control flow.
VALUE_METHODS = frozenset({"sum", "mean", "max", "min", "any", "all", "item", "norm", "abs", "amax", "amin", "count_nonzero", "isnan", "isinf"})

ALL_HAZARDS: tuple[Hazard, ...] = (CONTROL, ITEM, DATA_DEPENDENT_SHAPE, UNIQUE, COMPLEX, EXPAND, SPARSE, CHANNELS_LAST, LINALG, TOPK)
