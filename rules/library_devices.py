"""NRN116: devices handed to a library that does not accept ``neuron`` (torchrl, torchtune)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import libcst as cst

from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import keyword, positional
from porter.rules._lib.device import ACCELERATOR_TYPE, accelerator_string, cuda_string, neuron_string, retorch, torch_ref
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.tree import child_index, enclosing_function, visit_original

# Library callees, what they accept, and where their source says so (the versions of the corpus).
# torchrl 0.14.1 collectors: _get_sync_fn (torchrl/collectors/_single.py:1005-1023) raises "Non
# supported device" for a storing, env or policy device that is not cuda/mps/npu/cpu when no CUDA,
# MPS or NPU is available; the multi-process collectors build that Collector in each worker
# (torchrl/collectors/_runner.py:104-105, collector_class defaults to Collector).
COLLECTORS: dict[str, str] = {
    "torchrl.collectors.Collector": "torchrl/collectors/_single.py:1023",
    "torchrl.collectors._single.Collector": "torchrl/collectors/_single.py:1023",
    "torchrl.collectors.MultiCollector": "torchrl/collectors/_runner.py:105",
    "torchrl.collectors.MultiSyncCollector": "torchrl/collectors/_runner.py:105",
    "torchrl.collectors.MultiAsyncCollector": "torchrl/collectors/_runner.py:105",
    "torchrl.collectors.AsyncCollector": "torchrl/collectors/_runner.py:105",
}
_COLLECTOR_DEVICES = ("device", "env_device", "policy_device", "storing_device")
# torchrl._utils.get_available_device (torchrl/_utils.py:1197-1208): cuda:0, else npu:0, else mps:0, else cpu.
CHOOSERS: dict[str, str] = {"torchrl._utils.get_available_device": "torchrl/_utils.py:1197"}
# torchtune 0.6.1 get_dtype (torchtune/training/precision.py:108-115): bf16 on any device but the CPU
# calls verify_bf16_support (precision.py:63-72: CUDA, MPS, NPU, XPU only) and raises otherwise; the
# device argument is used for nothing else.
BF16_CHECKS: dict[str, str] = {
    "torchtune.training.get_dtype": "torchtune/training/precision.py:113",
    "torchtune.training.precision.get_dtype": "torchtune/training/precision.py:113",
}
# torchtune 0.6.1 get_memory_stats (torchtune/training/memory.py:263-270) raises for a CPU device and
# otherwise reads the memory calls of get_torch_device_namespace() (torchtune/utils/_device.py:251-264,
# from _get_device_type_from_env, :98-114: cuda, npu, xpu, else cpu): on a Trainium host torch.cpu,
# which has no memory_stats. The recipes call it only under their own `device.type != "cpu"` guard
# (full_finetune_single_device.py:453, :742): the recipe's policy for a device without memory stats.
MEMORY_STATS: dict[str, str] = {
    "torchtune.training.get_memory_stats": "torchtune/training/memory.py:266",
    "torchtune.training.memory.get_memory_stats": "torchtune/training/memory.py:266",
}


class LibraryDevices(Rule):
    """Keep the devices a library is handed to the ones it accepts, and pick the accelerator a library would not.

    What it does:
        * A torchrl collector (``Collector``, ``MultiSyncCollector``, ...) given a device that may
          be the accelerator (a variable, or a ``"cuda"``/``"neuron"`` literal) as ``device=``,
          ``env_device=``, ``policy_device=`` or ``storing_device=`` gets the CPU where that
          value is a ``neuron`` device: ``device=device`` →
          ``device="cpu" if str(device).startswith("neuron") else device``. When the batches
          were stored on that device (``storing_device=``, or ``device=`` without one), the loop
          over the collector in the same function moves each batch there
          (``batch = batch.to(device)``); without such a loop, a review marker says so. The
          policy stays where the script put it (the accelerator): torchrl then runs a CPU copy
          in the collector and copies the weights in at ``collector.update_policy_weights_()``;
          a file that never calls it gets a review marker.
        * torchrl's ``get_available_device()`` → ``torch.device("neuron:0" if
          torch.accelerator.is_available() else "cpu")`` (a string with ``return_str=True``).
        * torchtune's ``get_dtype(dtype, device=D)`` gets ``torch.device("cpu")`` as its device
          where ``D`` is a ``neuron`` device.
        * torchtune's ``get_memory_stats(device=D)`` under the recipe's ``D.type != "cpu"`` guard:
          the guard becomes ``D.type not in ("cpu", "neuron")`` (memory stats skipped on neuron, as
          the recipe skips them on the CPU); a call with no such guard gets a review marker.

    Why:
        torchrl 0.14.1's collectors pick a sync function per device and raise "Non supported
        device" for anything but cuda/mps/npu/cpu when none of CUDA, MPS, NPU is present
        (``torchrl/collectors/_single.py:1005-1023``): every collector device ported to
        ``neuron`` crashes on a Trainium host. torchrl supports the split kept here: a policy on
        the accelerator with a CPU collector (its own ``dqn_cartpole.py`` passes ``device="cpu"``
        with the model on CUDA; ``_base.py:757-828`` makes the CPU copy). ``get_available_device``
        (``torchrl/_utils.py:1197``) knows CUDA, NPU and MPS and returns the CPU on Trainium, so
        the port has to pick the accelerator itself (the CPU where there is none, as before).
        torchtune's ``get_dtype`` raises for bf16 on any non-CPU device whose bf16 support
        ``verify_bf16_support`` cannot see (``torchtune/training/precision.py:63-72,113``: CUDA,
        MPS, NPU, XPU); Trainium runs bf16 (``torch.neuron.is_bf16_supported()`` is True), and
        the device argument gates only that check. torchtune's ``get_memory_stats`` reads
        ``torch.cpu.memory_stats`` on a Trainium host (its device namespace knows cuda/npu/xpu,
        ``torchtune/utils/_device.py:98-114,251-264``; ``training/memory.py:266``) and raises
        AttributeError, so every recipe crashes after model init; the recipes' own answer for a
        device whose memory torchtune cannot read (the CPU) is to not log it. ``torch.neuron``
        has ``max_memory_allocated`` but a different ``memory_stats`` schema (neuron-facts 4.x:
        nested ``active_bytes`` dicts), so the call cannot simply be pointed at it.

    Before:
        collector = Collector(env, policy, device=cfg.env.device, storing_device=cfg.train.device)
        for i, batch in enumerate(collector):
            loss_module.value_estimator(batch)
        device = torch.device(cfg.device) if cfg.device else get_available_device()
        self._dtype = training.get_dtype(cfg.dtype, device=self._device)
        if self._device.type != "cpu":
            memory_stats = training.get_memory_stats(device=self._device)

    After:
        collector = Collector(env, policy, device="cpu" if str(cfg.env.device).startswith("neuron") else cfg.env.device, storing_device="cpu" if str(cfg.train.device).startswith("neuron") else cfg.train.device)
        for i, batch in enumerate(collector):
            batch = batch.to(cfg.train.device)
            loss_module.value_estimator(batch)
        device = torch.device(cfg.device) if cfg.device else torch.device("neuron:0" if torch.accelerator.is_available() else "cpu")
        self._dtype = training.get_dtype(cfg.dtype, device=torch.device("cpu") if str(self._device).startswith("neuron") else self._device)
        if self._device.type not in ("cpu", "neuron"):
            memory_stats = training.get_memory_stats(device=self._device)

    Safety:
        Review. Callees by qualified name (the table ``COLLECTORS``/``CHOOSERS``/``BF16_CHECKS``,
        each with its source line). Value heuristic: a device argument that is a name or an
        attribute may hold the accelerator and is wrapped (a value that is never ``neuron`` is
        kept by the test); a call or other expression is left alone (it would be evaluated
        twice); a ``"cpu"`` literal or ``None`` is kept. The batch move follows only
        ``for x in collector`` / ``for i, x in enumerate(collector)`` in the function that
        builds ``collector = ...``; a collector returned to another function gets the marker.
        The policy copy is a different object: code that reads the collector's policy between
        ``update_policy_weights_()`` calls sees the weights of the last call. The memory-stats
        guard is found by spelling of the call's own device argument: ``D.type != "cpu"`` in an
        enclosing ``if`` (alone or in an ``and``); on neuron the recipe then logs no memory.
    """

    code: ClassVar[str] = "NRN116"
    name: ClassVar[str] = "library-devices"
    summary: ClassVar[str] = ("devices torchrl collectors / torchtune's bf16 check reject -> CPU; get_available_device() -> "
                              "accelerator; torchtune's memory stats skipped on neuron")
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("Collector", "get_available_device", "get_dtype", "get_memory_stats")
    order: ClassVar[int] = 15  # after device_strings (10): a "cuda" it made "neuron" is seen as the port's

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified(node.func)
        collector = next((COLLECTORS[n] for n in names if n in COLLECTORS), None)
        if collector is not None:
            self._collector(node, collector)
        elif any(n in CHOOSERS for n in names):
            self._chooser(node, next(CHOOSERS[n] for n in names if n in CHOOSERS))
        elif any(n in BF16_CHECKS for n in names):
            self._bf16_check(node, next(BF16_CHECKS[n] for n in names if n in BF16_CHECKS))
        elif any(n in MEMORY_STATS for n in names):
            self._memory_stats(node, next(MEMORY_STATS[n] for n in names if n in MEMORY_STATS))

    # ------------------------------------------------------------------ torchrl collectors
    def _collector(self, node: cst.Call, source: str) -> None:
        torch, _ = torch_ref(self.context.module)
        wrapped: dict[str, cst.BaseExpression] = {}
        for name in _COLLECTOR_DEVICES:
            arg = keyword(node, name)
            if arg is None or not self._may_be_accelerator(arg.value):
                continue
            wrapped[name] = arg.value
            new = self._cpu_where_neuron(arg.value, '"cpu"')
            self.replace(arg, _with_value(new),
                         f"torchrl's collector rejects a neuron {name} ({source}): the CPU where it is neuron")
        if not wrapped:
            return
        storing = keyword(node, "storing_device")
        stored_on = wrapped.get("storing_device") if storing is not None else wrapped.get("device")
        if stored_on is not None:
            self._move_batches(node, self._ported_text(stored_on, torch))
        if "device" in wrapped or "policy_device" in wrapped:
            if "update_policy_weights_" not in self.context.text:
                self.mark(node, "the collector runs a CPU copy of the policy (torchrl/collectors/_base.py:805-828): "
                          "call collector.update_policy_weights_() after each optimizer step")

    def _move_batches(self, node: cst.Call, target: str | None) -> None:
        assign = self.parent(node)
        name = None
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
            name = dotted(assign.targets[0].target)
        loop = self._loop_over(node, name) if name and target else None
        if loop is None:
            self.mark(node, f"the collector now stores its batches on the CPU: move each batch to {target or 'the device'} "
                      "where the script uses it (batch = batch.to(device))")
            return
        loop_node, batch = loop
        body = loop_node.body
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            return
        move = cst.parse_statement(f"{batch} = {batch}.to({target})")
        self.insert_before(body.body[0], [move], f"the collector stores on the CPU: each batch moved to {target}")

    def _loop_over(self, node: cst.Call, name: str) -> tuple[cst.For, str] | None:
        scope: cst.CSTNode = enclosing_function(self, node) or self.context.module
        found: list[tuple[cst.For, str]] = []

        class Loops(cst.CSTVisitor):
            def visit_For(self, loop: cst.For) -> None:
                it, target = loop.iter, loop.target
                if dotted(it) == name and isinstance(target, (cst.Name, cst.Attribute)):
                    found.append((loop, str(dotted(target))))
                elif (isinstance(it, cst.Call) and dotted(it.func) == "enumerate" and it.args
                      and dotted(it.args[0].value) == name and isinstance(target, cst.Tuple)
                      and len(target.elements) == 2 and isinstance(target.elements[1].value, cst.Name)):
                    found.append((loop, str(dotted(target.elements[1].value))))

        visit_original(child_index(self), scope, Loops())
        return found[0] if len(found) == 1 else None

    # ------------------------------------------------------------------ torchrl get_available_device
    def _chooser(self, node: cst.Call, source: str) -> None:
        flag = keyword(node, "return_str") or positional(node, 0)
        if flag is not None and not (isinstance(flag.value, cst.Name) and flag.value.value in ("True", "False")):
            self.mark(node, f"get_available_device() returns the CPU on Trainium ({source}): pick the accelerator explicitly")
            return
        torch, imports = torch_ref(self.context.module)
        if self.options.style == "accelerator":
            choice = f'f"{{{retorch(ACCELERATOR_TYPE, torch)}}}:0" if {torch}.accelerator.is_available() else "cpu"'
        else:
            choice = f'"neuron:0" if {torch}.accelerator.is_available() else "cpu"'
        as_string = flag is not None and isinstance(flag.value, cst.Name) and flag.value.value == "True"
        new = cst.parse_expression(f"({choice})" if as_string else f"{torch}.device({choice})")
        self.replace(node, new, f"get_available_device() knows CUDA/NPU/MPS only ({source}): the accelerator, else the CPU",
                     imports=imports, drops_calls=True)
        for name in self.qualified(node.func):
            module, _, obj = name.rpartition(".")
            self.drop_import_if_unused(ImportSpec(module, obj))

    # ------------------------------------------------------------------ torchtune get_dtype
    def _bf16_check(self, node: cst.Call, source: str) -> None:
        arg = keyword(node, "device") or positional(node, 1)
        if arg is None or not self._may_be_accelerator(arg.value) or string_value(arg.value) is not None:
            return
        torch, imports = torch_ref(self.context.module)
        new = self._cpu_where_neuron(arg.value, f'{torch}.device("cpu")')
        self.replace(arg, lambda n: n.with_changes(value=new),
                     f"torchtune's bf16 check knows no neuron device ({source}); Trainium runs bf16: checked as the CPU",
                     imports=imports)

    # ------------------------------------------------------------------ torchtune get_memory_stats
    def _memory_stats(self, node: cst.Call, source: str) -> None:
        arg = keyword(node, "device") or positional(node, 0)
        device = dotted(arg.value) if arg is not None else None
        if arg is None or device is None or not self._may_be_accelerator(arg.value):
            return
        guard = self._cpu_guard(node, device)
        if guard is _PORTED:
            return  # the guard already skips neuron (a fixed point)
        if guard is None:
            self.mark(node, f"torchtune's get_memory_stats reads torch.cpu on Trainium ({source}: its device namespace "
                      "knows cuda/npu/xpu only): skip it where the device is neuron")
            return
        self.replace(guard, cst.parse_expression(f'{device}.type not in ("cpu", "neuron")'),
                     f"torchtune's get_memory_stats reads torch.cpu on Trainium ({source}): memory stats skipped on "
                     "neuron, as the recipe skips them on the CPU")

    def _cpu_guard(self, node: cst.Call, device: str) -> cst.BaseExpression | None:
        """The ``DEVICE.type != "cpu"`` test of an ``if`` around ``node`` (alone or in an ``and``);
        ``_PORTED`` when that test is already ``DEVICE.type not in ("cpu", "neuron")``."""
        below: cst.CSTNode = node
        for ancestor in self.ancestors(node):
            if not isinstance(ancestor, cst.If) or below is not ancestor.body:
                below = ancestor  # an else branch runs where the test is False: not guarded by it
                continue
            below = ancestor
            tests: list[cst.BaseExpression] = [ancestor.test]
            while tests:
                test = tests.pop()
                if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
                    tests += [test.left, test.right]
                elif (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                      and isinstance(test.comparisons[0].operator, cst.NotEqual)
                      and string_value(test.comparisons[0].comparator) == "cpu" and dotted(test.left) == f"{device}.type"):
                    return test
                elif (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                      and isinstance(test.comparisons[0].operator, cst.NotIn) and dotted(test.left) == f"{device}.type"
                      and isinstance(test.comparisons[0].comparator, cst.Tuple)
                      and {string_value(e.value) for e in test.comparisons[0].comparator.elements} >= {"cpu", "neuron"}):
                    return _PORTED
        return None

    # ------------------------------------------------------------------ values
    def _may_be_accelerator(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Name):
            return value.value not in ("None", "True", "False")
        if isinstance(value, cst.Attribute):
            return dotted(value) is not None
        text = string_value(value)
        return text is not None and (cuda_string(value) or text.startswith("neuron"))

    def _cpu_where_neuron(self, value: cst.BaseExpression, cpu: str) -> cst.BaseExpression:
        if string_value(value) is not None:
            return cst.parse_expression(cpu)  # an explicit accelerator literal: the CPU is all it can be
        text = dotted(value)
        return cst.parse_expression(f'{cpu} if str({text}).startswith("neuron") else {text}')

    def _ported_text(self, value: cst.BaseExpression, torch: str) -> str | None:
        """Where the batches go: the value as the port spells it."""
        if isinstance(value, (cst.Name, cst.Attribute)):
            return dotted(value)
        if cuda_string(value):
            ported = accelerator_string(value, torch) if self.options.style == "accelerator" else neuron_string(value)
            return self.context.module.code_for_node(ported)
        return self.context.module.code_for_node(value)


_PORTED = cst.Name("_ported_guard")  # _cpu_guard's answer for a guard that already skips neuron


def _with_value(value: cst.BaseExpression) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """An edit that gives the (updated) argument ``value``."""
    return lambda arg: arg.with_changes(value=value)
