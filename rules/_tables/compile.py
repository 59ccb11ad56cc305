"""Data behind the torch.compile rules (NRN401-NRN411); no rule lives here.

AWS Neuron docs, torch.compile reference (torch/compile/reference-torch-compile): TorchNeuron reads only a few ``options`` keys (``model_name``, ``fallback_execution``,
``dynamic``) and ignores ``mode``; TorchNeuron does not use TorchInductor (AWS Neuron docs, about torch.compile (torch/compile/about-torch-compile)), so Inductor,
Triton and CUDA-graph settings have no effect on Neuron.
"""

from __future__ import annotations

import re

# Every keyword ``torch.compile`` (and so ``nn.Module.compile``) accepts in torch 2.13.
COMPILE_KEYWORDS: frozenset[str] = frozenset(
    {
        "fullgraph",
        "dynamic",
        "backend",
        "mode",
        "options",
        "name",
        "disable",
        "recompile_limit",
        "isolate_recompiles",
        "shapes_spec",
    }
)

# Other libraries' helpers that pass their arguments on to ``torch.compile`` (ported like it), each
# with where that was read.
COMPILE_FORWARDERS: dict[str, str] = {
    # torchrl 0.14.1 torchrl/_utils.py: ``@wraps(torch.compile) def compile_with_warmup(*args, warmup=1,
    # **kwargs)``; after ``warmup`` eager calls it calls ``torch.compile(model, *args, **kwargs)``.
    "torchrl._utils.compile_with_warmup": "torchrl/_utils.py",
    "torchrl.compile_with_warmup": "torchrl/__init__.py (re-export of torchrl._utils.compile_with_warmup)",
}

# Backends that only make sense on CUDA (or are Inductor itself): they become ``"neuron"``.
CUDA_BACKENDS: frozenset[str] = frozenset(
    {"inductor", "cudagraphs", "nvprims_nvfuser", "aot_ts_nvfuser", "tensorrt", "torch_tensorrt", "openxla", "tvm", "onnxrt"}
)

# Debugging backends that run anywhere: a port keeps them (the user chose not to compile for speed).
DEBUG_BACKENDS: frozenset[str] = frozenset({"eager", "aot_eager", "aot_eager_decomp_partition"})

# ``options`` keys TorchNeuron reads (kept); AWS Neuron docs, torch.compile reference (torch/compile/reference-torch-compile).
NEURON_OPTION_KEYS: frozenset[str] = frozenset({"model_name", "fallback_execution", "dynamic"})

# Inductor option keys with no meaning off Inductor (dropped). Prefixes and patterns below too.
INDUCTOR_OPTION_KEYS: frozenset[str] = frozenset(
    {
        "max_autotune",
        "max_autotune_gemm",
        "max_autotune_pointwise",
        "max_autotune_gemm_backends",
        "epilogue_fusion",
        "coordinate_descent_tuning",
        "shape_padding",
        "freezing",
        "layout_optimization",
        "aggressive_fusion",
        "benchmark_kernel",
        "benchmark_fusion",
        "use_mixed_mm",
        "force_fuse_int_mm_with_mul",
        "split_reductions",
        "conv_1x1_as_mm",
        "fallback_random",
        "reorder_for_compute_comm_overlap",
        "compile_threads",
    }
)
_INDUCTOR_KEY = re.compile(r"^(triton|cuda|cpp|trace|aot_inductor)\.|cudagraph|autotune")


def cuda_only_option(key: str) -> bool:
    """Whether an ``options`` key is an Inductor/Triton/CUDA-graph setting (dropped on Neuron)."""
    if key in NEURON_OPTION_KEYS:
        return False
    return key in INDUCTOR_OPTION_KEYS or bool(_INDUCTOR_KEY.search(key))


# Names that say "this is the script's own compile switch": compile, use_compile, args.compile ...
COMPILE_SWITCH = re.compile(r"(?i)^(use_|do_|enable_|torch_?)?compile(_model)?$")


# Input pipelines whose batches change shape from one step to the next (issue 16 §3): detection
# multi-scale training (DETR-style ``RandomResize(scales)``, YOLO's ``multi_scale`` option) and
# padding each batch to its own largest image (DETR's ``nested_tensor_from_tensor_list``). With
# ``dynamic=False`` every new shape is a full Neuron compile.
VARYING_SHAPE_CALLS: frozenset[str] = frozenset({"RandomResize", "nested_tensor_from_tensor_list"})
VARYING_SHAPE_NAME = re.compile(r"(?i)^multi_?scale(_train(ing)?)?$")

# A collate function that tokenizes each batch (sentence-transformers' ``fit`` sets
# ``loader.collate_fn = self.smart_batching_collate``, which calls ``self.tokenize(texts)``, padded to
# the batch's longest text): the callee names that tokenize, and the padding that makes the length
# fixed (``padding="max_length"`` with a ``max_length``; review round 6, W11b).
TOKENIZE_CALLS: frozenset[str] = frozenset({"tokenize", "tokenizer", "encode_plus", "batch_encode_plus"})
# sentence-transformers 5's collate calls ``self.preprocess(column)`` (its modality-generic
# tokenize; review round 7): a generic name (image pipelines preprocess to a fixed size), so it counts
# only where its statement reads texts (a name containing one of these words).
TEXT_PREPROCESS_CALLS: frozenset[str] = frozenset({"preprocess"})
TEXT_WORDS = ("text", "sentence")
FIXED_PADDING = "max_length"

# Library modules whose forward swaps parameters in per call (tensordict's functional parameters:
# torchrl's loss modules call their actor/critic through ``_param_td`` views): a compiled instance
# recompiles on the swapped tensors' identity guards at every step (the check on the corpus:
# torchrl ``multiagent/mappo_ippo.py``, ``ClipPPOLoss``, recompiles at steps 1 and 2 at
# tensordict/nn/probabilistic.py:1910, "_param_td got deallocated"). Qualified-name prefixes.
PARAM_SWAPPING_MODULES: tuple[tuple[str, str], ...] = (
    ("torchrl.objectives.", "torchrl's loss modules call their networks with swapped-in functional parameters (tensordict)"),
)

# NRN415 (compile-update): the torchrl loss classes whose training step is compiled as one update
# function. Measured with porter check (torchrl 0.14.1, 2026-12-02): DQNLoss (multiagent/iql.py)
# verified. ClipPPOLoss over a TanhNormal actor of MultiAgentMLPs (multiagent/mappo_ippo.py) is not
# listed: compiled this way it still recompiled at steps 1 and 2 at tensordict/nn/probabilistic.py:1910
# (a guard on a _param_td rebuilt per call). DDPGLoss is not listed: its TanhDelta actor
# (multiagent/maddpg_iddpg.py) raises under compile whatever the torch version
# (torchrl/modules/distributions/continuous.py:810-811, safe=True by default: _err_compile_safetanh).
# SACLoss / DiscreteSACLoss are not listed: multiagent/sac.py (TanhNormal actor over MultiAgentMLPs)
# compiled this way recompiled 13 times after warm-up at probabilistic.py:1910, as mappo_ippo did.
UPDATE_STEP_LOSSES: frozenset[str] = frozenset(
    {
        "torchrl.objectives.DQNLoss",
        "torchrl.objectives.dqn.DQNLoss",
        "torchrl.objectives.multiagent.QMixerLoss",
        "torchrl.objectives.multiagent.qmixer.QMixerLoss",
    }
)
# Target-network updaters whose step() joins the update (SoftUpdate: tensor arithmetic only;
# HardUpdate counts its steps in a Python int, torchrl/objectives/utils.py:620, and recompiles).
UPDATE_STEP_TARGET_UPDATERS: frozenset[str] = frozenset({"torchrl.objectives.SoftUpdate", "torchrl.objectives.utils.SoftUpdate"})
# Target-network updaters that count their steps in a Python int (compiled code guards on the
# count): HardUpdate, torchrl 0.14.1 torchrl/objectives/utils.py:595-627 (`self.counter += 1`,
# `if self.counter == self.value_network_update_interval`). NRN416 runs their step() eagerly.
COUNTING_TARGET_UPDATERS: frozenset[str] = frozenset({"torchrl.objectives.HardUpdate", "torchrl.objectives.utils.HardUpdate"})
