"""NRN111: CUDA profiler settings get a review marker."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import keyword
from porter.rules._lib.device import profiler_activity
from porter.rules._lib.nodes import method_name, string_value

_ACTIVITY = (
    "torch.profiler.ProfilerActivity.CUDA",
    "torch.autograd.ProfilerActivity.CUDA",
    "torch.autograd.profiler.ProfilerActivity.CUDA",
    "torch._C._profiler.ProfilerActivity.CUDA",
)
_PROFILERS = ("torch.profiler.", "torch.autograd.profiler.", "torch.autograd.profiler_legacy.")


class CudaProfiler(Rule):
    """Mark profiler configuration that only measures CUDA.

    What it does:
        Adds a ``# porter: NRN111`` review marker above statements that use
        ``ProfilerActivity.CUDA``, pass ``use_cuda=True`` to a ``torch.profiler`` /
        ``torch.autograd.profiler`` call, name the activity as the string ``"cuda"`` in any call's
        ``activities=`` keyword (library profilers take strings: ``activities=["cpu", "cuda"]``), or
        sort a profile table by a CUDA column (``key_averages().table(sort_by="cuda_time_total")``).
        The code is kept.

    Why:
        On Trainium nothing runs on CUDA, so these activities record no device time and
        ``use_cuda=True`` asks for a CUDA runtime that is absent. The device-side view comes from
        ``ProfilerActivity.PrivateUse1`` (the activity for out-of-tree devices such as ``neuron``)
        or the Neuron profiler; whether TorchNeuron reports kernels through the PyTorch profiler is
        unverified (not in the facts), so porter does not rewrite the activity list.

    Before:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
        print(prof.key_averages().table(sort_by="cuda_time_total"))

    After:
        # porter: NRN111 ProfilerActivity.CUDA records nothing on Neuron; try ProfilerActivity.PrivateUse1 ...
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
        # porter: NRN111 sorting by a CUDA column; use "cpu_time_total" or a device column ...
        print(prof.key_averages().table(sort_by="cuda_time_total"))

    Safety:
        Review markers only. Receiver heuristic for ``.table(sort_by=...)``: any ``table`` method
        call with a ``sort_by`` string containing ``cuda`` (profile tables are the common case). An
        ``activities=`` keyword is a profiler's on any callee (the name is the profiler's own), so its
        ``"cuda"`` strings are activities, not devices: NRN101 leaves them to this rule.
    """

    code: ClassVar[str] = "NRN111"
    name: ClassVar[str] = "cuda-profiler"
    summary: ClassVar[str] = "ProfilerActivity.CUDA / use_cuda=True / CUDA sort keys -> review marker"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("ProfilerActivity", "use_cuda", "cuda_time", "cuda_memory")
    order: ClassVar[int] = 50

    @classmethod
    def triggered_by(cls, text: str) -> bool:
        # The words, or an ``activities`` keyword beside a "cuda" string (both are needed to mark one).
        return any(word in text for word in cls.triggers) or ("activities" in text and ('"cuda"' in text or "'cuda'" in text))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "CUDA" and self.matches(node, *_ACTIVITY):
            self.mark(
                node,
                "ProfilerActivity.CUDA records nothing on Neuron; try ProfilerActivity.PrivateUse1 or the Neuron profiler",
            )

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if string_value(node) == "cuda" and profiler_activity(self, node):
            self.mark(node, 'the profiler activity "cuda" records nothing on Neuron; try ProfilerActivity.PrivateUse1 or the Neuron profiler')

    def visit_Call(self, node: cst.Call) -> None:
        use_cuda = keyword(node, "use_cuda")
        if use_cuda is not None and self._is_profiler(node.func):
            self.mark(node, 'use_cuda=True needs CUDA; drop it or pass use_device="neuron" (unverified on Neuron)')
        sort_by = keyword(node, "sort_by")
        if method_name(node) == "table" and sort_by is not None:
            value = string_value(sort_by.value)
            if value is not None and "cuda" in value:
                self.mark(node, f'sort_by="{value}" is a CUDA column, empty on Neuron; sort by "cpu_time_total"')

    def _is_profiler(self, func: cst.BaseExpression) -> bool:
        return any(name.startswith(_PROFILERS) for name in self.qualified(func))
