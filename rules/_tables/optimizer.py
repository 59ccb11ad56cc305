"""Data behind the CUDA-only optimizer rule (NRN511/NRN512); no rule lives here.

Each entry names the torch optimizer a CUDA-only (or legacy XLA) optimizer becomes, the source
class's positional parameters (so positional arguments can be carried over by name), the source
defaults that differ from the torch class's (written out so the hyper-parameters stay exactly the
same), and the source-only keywords: ``dropped`` ones only change memory/precision of the state and
are removed; ``blocking`` ones change the update when not at their default, so the call is kept and
marked instead.

Sources: bitsandbytes ``optim/adam.py``/``adamw.py`` (``Adam*`` and ``AdamW*`` share the one
``"adam"`` kernel, whose weight decay is decoupled — inference from the bnb source: Adam8bit with
weight decay is AdamW), apex ``optimizers/fused_adam.py`` (``adam_w_mode=True`` by default,
``weight_decay=0``), torch_xla ``amp/syncfree`` (same signatures as torch.optim).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OptimizerPort:
    target: str  # "AdamW" | "Adam" | "SGD" (torch.optim.<target>)
    positional: tuple[str, ...]  # the source's parameters after ``params``, in order
    defaults: dict[str, str] = field(default_factory=dict)  # source default -> written when absent
    dropped: frozenset[str] = frozenset()
    blocking: dict[str, str] = field(default_factory=dict)  # keyword -> the only value that ports
    note: str | None = None  # review note (memory/behaviour), also a marker when set


_BNB_POSITIONAL = (
    "lr", "betas", "eps", "weight_decay", "amsgrad", "optim_bits", "args", "min_8bit_size", "percentile_clipping", "block_wise", "is_paged",
)
_BNB_PAGED_POSITIONAL = _BNB_POSITIONAL[:-1]
_BNB_DROPPED = frozenset({"optim_bits", "min_8bit_size", "block_wise", "is_paged"})
_BNB_BLOCKING = {"percentile_clipping": "100", "args": "None"}
_NOTES = {
    (True, False): "8-bit optimizer state is now fp32 (~4x optimizer memory): check device memory",
    (False, True): "paged optimizer state is now plain device memory: check device memory",
    (True, True): "8-bit paged optimizer state is now fp32 device memory (~4x): check device memory",
}


def _bnb(target_decay_zero: bool, paged: bool, eight_bit: bool) -> OptimizerPort:
    return OptimizerPort(
        target="AdamW",
        positional=_BNB_PAGED_POSITIONAL if paged else _BNB_POSITIONAL,
        defaults={"weight_decay": "0.0"} if target_decay_zero else {},
        dropped=_BNB_DROPPED,
        blocking=_BNB_BLOCKING,
        note=_NOTES.get((eight_bit, paged)),
    )


BITSANDBYTES: dict[str, OptimizerPort] = {
    "Adam": _bnb(True, False, False),
    "Adam8bit": _bnb(True, False, True),
    "Adam32bit": _bnb(True, False, False),
    "PagedAdam": _bnb(True, True, False),
    "PagedAdam8bit": _bnb(True, True, True),
    "PagedAdam32bit": _bnb(True, True, False),
    "AdamW": _bnb(False, False, False),
    "AdamW8bit": _bnb(False, False, True),
    "AdamW32bit": _bnb(False, False, False),
    "PagedAdamW": _bnb(False, True, False),
    "PagedAdamW8bit": _bnb(False, True, True),
    "PagedAdamW32bit": _bnb(False, True, False),
}

# apex FusedAdam(params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8,
#                adam_w_mode=True, weight_decay=0.0, amsgrad=False, set_grad_none=True,
#                capturable=False, master_weights=False)
APEX_FUSED_ADAM = OptimizerPort(
    target="AdamW",  # adam_w_mode=False: Adam semantics (see the rule)
    positional=(
        "lr", "bias_correction", "betas", "eps", "adam_w_mode", "weight_decay", "amsgrad", "set_grad_none", "capturable", "master_weights",
    ),
    defaults={"weight_decay": "0.0"},
    dropped=frozenset({"set_grad_none", "adam_w_mode"}),
    blocking={"bias_correction": "True", "capturable": "False", "master_weights": "False"},
)

# apex FusedSGD(params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False,
#               wd_after_momentum=False, materialize_master_grads=True, set_grad_none=False)
APEX_FUSED_SGD = OptimizerPort(
    target="SGD",
    positional=(
        "lr", "momentum", "dampening", "weight_decay", "nesterov", "wd_after_momentum", "materialize_master_grads", "set_grad_none",
    ),
    dropped=frozenset({"materialize_master_grads", "set_grad_none"}),
    blocking={"wd_after_momentum": "False"},
)

APEX_NO_EQUIVALENT: dict[str, str] = {
    "FusedLAMB": "apex FusedLAMB is CUDA-only and torch has no LAMB: port by hand (or AdamW fused, retuned)",
    "FusedMixedPrecisionLamb": "apex FusedMixedPrecisionLamb is CUDA-only and torch has no LAMB: port by hand",
    "FusedNovoGrad": "apex FusedNovoGrad is CUDA-only and torch has no NovoGrad: port by hand",
    "FusedAdagrad": "apex FusedAdagrad is CUDA-only: port to torch.optim.Adagrad by hand (its signature differs)",
}

# torch_xla.amp.syncfree.{Adam, AdamW, SGD}: same parameters as the torch.optim classes.
SYNCFREE: dict[str, OptimizerPort] = {
    "AdamW": OptimizerPort(target="AdamW", positional=("lr", "betas", "eps", "weight_decay", "amsgrad")),
    "Adam": OptimizerPort(target="Adam", positional=("lr", "betas", "eps", "weight_decay", "amsgrad")),
    "SGD": OptimizerPort(target="SGD", positional=("lr", "momentum", "dampening", "weight_decay", "nesterov")),
}
