"""NRN109: ``nn.DataParallel`` gets a review marker pointing to DDP + torchrun."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.branches import DATA_PARALLEL as _NAMES


class DataParallel(Rule):
    """Mark single-process multi-device ``DataParallel`` for a move to DDP.

    What it does:
        Adds ``# porter: NRN109 ...`` above every ``nn.DataParallel(...)`` /
        ``nn.parallel.data_parallel(...)`` call (any import spelling). The code is kept.

    Why:
        TorchNeuron runs one process per logical NeuronCore ("Attempted to have more than one
        device per process in distributed setup", AWS Neuron docs, TorchNeuron distributed guide (torch/guides/torch-distributed); AWS Neuron docs, TorchNeuron troubleshooting (torch/troubleshooting)); ``DataParallel`` drives
        several devices from one process through ``torch.cuda.comm`` scatter/gather. The port is
        ``DistributedDataParallel`` with ``init_process_group(backend="neuron")``, launched with
        ``torchrun --nproc_per_node=<NeuronCores>`` — a restructuring (sampler, launch command,
        rank-0 logging) porter does not do blindly.

    Before:
        model = nn.DataParallel(model)

    After:
        # porter: NRN109 nn.DataParallel is single-process multi-device; port to DDP + backend 'neuron' + torchrun
        model = nn.DataParallel(model)

    Safety:
        Review marker only; nothing is rewritten. With ``--style accelerator`` the advice names
        the accelerator's default backend (what NRN301 writes there), not "neuron". A ``torch.cuda.device_count() > 1`` /
        ``is_available()`` test guarding the call is kept by NRN103 (it stays false on Neuron,
        so the wrap never runs there). Name heuristic: qualified names of the DataParallel
        class and function (any import spelling). ``isinstance(m, nn.DataParallel)`` checks (to
        unwrap ``.module``) are not marked: they stay correct after the move to DDP if the user
        adds ``DistributedDataParallel`` to them.
    """

    code: ClassVar[str] = "NRN109"
    name: ClassVar[str] = "data-parallel"
    summary: ClassVar[str] = "nn.DataParallel -> review marker (use DDP + torchrun)"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("DataParallel", "data_parallel")
    order: ClassVar[int] = 50

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, *_NAMES):
            # --style accelerator writes the device-generic backend (NRN301): the advice names it.
            backend = ("the accelerator's default backend (torch.distributed.get_default_backend_for_device)"
                       if self.options.style == "accelerator" else "backend 'neuron'")
            self.mark(node, f"nn.DataParallel is single-process multi-device; port to DDP + {backend} + torchrun")
