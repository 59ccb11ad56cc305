"""NRN116: devices handed to a library that does not accept ``neuron`` (torchrl, torchtune)."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import ClassVar, cast

import libcst as cst

from porter.engine.astcheck import SourceFacts
from porter.engine.changes import ImportSpec, Safety
from porter.engine.rule import FileContext, Rule
from porter.rules._lib.args import keyword, positional
from porter.rules._lib.branches import in_kept_cuda_branch
from porter.rules._lib.buffers import samples, shared, storage_device
from porter.rules._lib.collectors import (
    BOUNDED,
    BatchRead,
    PolicySyncs,
    batch_reads,
    bound_to_cpu,
    continues,
    copies_policy,
    device_bounds,
    fills_buffer,
    host_bounds,
    name_counts,
    never_accelerator,
    qualified_names,
    sole_binding,
)
from porter.rules._lib.device import (
    ACCELERATOR_TYPE,
    ACCELERATOR_TYPE_OR_CUDA,
    accelerator_string,
    cuda_string,
    neuron_string,
    retorch,
    torch_ref,
)
from porter.rules._lib.imports import name_binders
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.precision import imported_as
from porter.rules._lib.statements import wrapped_in_if
from porter.rules._lib.tree import child_index, enclosing_function, name_bindings

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
# Env transforms that hold networks a loss trains: the collector moves its env to the env device
# (torchrl/collectors/_single.py:1223-1224, env.to(env_device)), so on a CPU collector these networks
# leave the accelerator the loss runs them on. torchrl 0.14.1 RNDTransform keeps the predictor that
# RNDLoss trains and the target (torchrl/envs/transforms/rnd.py:137-152; sota-implementations/rnd
# shares them with the loss).
ENV_NETWORK_TRANSFORMS: dict[str, str] = {
    "torchrl.envs.transforms.RNDTransform": "torchrl/envs/transforms/rnd.py:137-152",
    "torchrl.envs.transforms.rnd.RNDTransform": "torchrl/envs/transforms/rnd.py:137-152",
    "torchrl.envs.RNDTransform": "torchrl/envs/transforms/rnd.py:137-152",
}
_RND_TRANSFORM = "RNDTransform"
# The single-process collector: a refresh of the main process's transform is what its env steps with.
SINGLE_COLLECTORS = ("torchrl.collectors.Collector", "torchrl.collectors._single.Collector")
# The policy copy a CPU policy device makes of an accelerator policy (_base.py:779-824: deepcopy,
# weights mapped to the policy device), refreshed only by update_policy_weights_() (_single.py:1708-1736:
# the original policy's weights copied in); the iterator never syncs it (_single.py:1774-1860).
_POLICY_COPY = "torchrl/collectors/_base.py:805-828"
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
# torchtune 0.6.1 compile_model / compile_loss (torchtune/training/_compile.py:47, :73) compile with
# backend=os.environ.get("TORCH_COMPILE_BACKEND", "inductor"): Inductor on a Trainium host, where
# TorchNeuron compiles with backend="neuron" only (neuron-facts 3.x: "does not use TorchInductor").
COMPILERS: dict[str, str] = {
    "torchtune.training.compile_model": "torchtune/training/_compile.py:47",
    "torchtune.training._compile.compile_model": "torchtune/training/_compile.py:47",
    "torchtune.training.compile_loss": "torchtune/training/_compile.py:73",
    "torchtune.training._compile.compile_loss": "torchtune/training/_compile.py:73",
}
_BACKEND_ENV = "TORCH_COMPILE_BACKEND"
_RECIPE_DEVICE = "self._device"  # the device a torchtune recipe loads its model and loss onto

# torchtune 0.6.1 cleanup_before_training (torchtune/training/memory.py:46-53) empties the cache of
# get_torch_device_namespace(), the host's namespace (cuda/npu/xpu, else torch.cpu): torch.cpu on a
# Trainium host, which has no empty_cache in torch 2.13 (AttributeError).
CLEANUPS: dict[str, str] = {
    "torchtune.training.cleanup_before_training": "torchtune/training/memory.py:52",
    "torchtune.training.memory.cleanup_before_training": "torchtune/training/memory.py:52",
}
# torchtune 0.6.1 get_device (torchtune/utils/_device.py:172) gives cuda/npu/xpu devices the
# LOCAL_RANK index; _validate_device_from_env (:131-139) then raises for any other device whose
# index is not LOCAL_RANK: an unindexed "neuron" under torchrun.
DEVICE_GETTERS: dict[str, str] = {
    "torchtune.utils.get_device": "torchtune/utils/_device.py:131-139",
    "torchtune.utils._device.get_device": "torchtune/utils/_device.py:131-139",
}
# torchtune 0.6.1's subpackages (a file below one is the library's own code).
_TORCHTUNE_PACKAGES = frozenset({"training", "utils", "modules", "models", "data", "datasets", "config", "rlhf",
                                 "generation", "dev", "_cli"})
# torchtune 0.6.1's CheckpointClient(cfg) calls get_device(device=cfg.device) itself
# (torchtune/training/checkpointing/_checkpoint_client.py:75): the same rejection of an unindexed
# neuron device under torchrun, in the library (full_finetune_distributed.py:183).
CONFIG_DEVICE_READERS: dict[str, str] = {
    "torchtune.training.checkpointing._checkpoint_client.CheckpointClient":
        "torchtune/training/checkpointing/_checkpoint_client.py:75",
}
# torchrl 0.14.1 pickles a replay buffer's storage for another process (a multi-process collector's
# worker) only when it is on cpu, cuda or meta: "The storage must be place in shared memory or memmapped
# before being shared between processes" (torchrl/data/replay_buffers/storages/tensor.py:510-518).
_SHARED_STORAGE = "torchrl/data/replay_buffers/storages/tensor.py:510-518"
_INIT_PROCESS_GROUP = ("torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group")
# torchrl 0.14.1's TanhNormal and TanhDelta move their bounds to their parameters' device themselves.
_BOUNDS_MOVED = "torchrl/modules/distributions/continuous.py:436-443, TanhNormal; :823-824, TanhDelta"
_HOST_NOT_NEURON = 'getattr({torch}.accelerator.current_accelerator(), "type", None) != "neuron"'


class LibraryDevices(Rule):
    """Keep the devices a library is handed to the ones it accepts, and pick the accelerator a library would not.

    What it does:
        * A torchrl collector (``Collector``, ``MultiSyncCollector``, ...) given a device that may
          be the accelerator (a variable, or a ``"cuda"``/``"neuron"`` literal) as ``device=``,
          ``env_device=``, ``policy_device=`` or ``storing_device=`` gets the CPU where that
          value is a ``neuron`` device: ``device=device`` →
          ``device="cpu" if str(device).startswith("neuron") else device``. A name bound to the
          CPU in view (``env_device = torch.device("cpu")``) is never neuron and is kept.
        * Where the batches were stored on a wrapped device (``storing_device=``, else
          ``device=``, else the env/policy device when both are one value: torchrl's defaults),
          each read of the collector in the function that builds it moves the batch back
          (``batch = batch.to(device)``): first in the body of ``for x in collector`` /
          ``for i, x in enumerate(collector)`` (or over ``it = iter(collector)``), after
          ``x = next(it)`` / ``x = next(iter(collector))``, and in place elsewhere
          (``f(next(it))`` → ``f(next(it).to(device))``; a dropped ``next(it)`` is left). A
          collector given ``replay_buffer=`` hands the script no batch: no move. Where a read
          cannot be followed (``next(it, None)``, ``for a, b in collector``, the collector handed
          to a call: ``train(collector)``), a review marker.
        * The policy stays where the script put it (the accelerator). Where its collector device
          (``policy_device=``, else ``device=``) became the CPU, torchrl acts with a CPU copy
          that only ``collector.update_policy_weights_()`` refreshes; a file that never calls it
          gets the call before each batch is collected (before each ``x = next(it)``; at the end
          of the loop's body), under the wrap's own test (``if str(device).startswith("neuron"):``;
          none for a literal), and a review marker where it cannot be placed (no read followed, a
          ``continue`` in the loop, a collector name with another binding: ``c = iter(c)``).
          Nothing for a collector that copies no policy module: ``policy=None``, a
          ``policy_factory=``, a lambda, a function of the file or a ``RandomPolicy(...)``.
        * Such a collector whose env argument carries a transform holding networks a loss trains
          (``ENV_NETWORK_TRANSFORMS``: torchrl's ``RNDTransform``; in the env argument, or in the
          call a name of it is bound to: ``env = TransformedEnv(base, bonus)``) would move those
          networks to the CPU with its env, away from the loss on the accelerator. Where the transform is a name of
          the collector's function bound once to ``RNDTransform(target_network=t,
          predictor_network=p, ...)`` (plain names, keyword or positional), the transform gets its
          own copies where the env device is neuron (``copy.deepcopy(p) if
          str(device).startswith("neuron") else p``), refreshed from ``t`` and ``p`` before each
          batch is collected (``bonus.predictor_network.load_state_dict(p.state_dict())`` under the
          same test, placed as the policy sync below, and before a ``for`` loop over the
          collector); the target is frozen as the transform froze the shared one. Only for the
          single-process ``Collector``. A review marker instead where the transform is called in
          the argument or bound more than once, its name (or the env's it is reached through) is
          used anywhere but in the env argument
          (a loss handed ``bonus.predictor_network``, ``bonus.load_state_dict(...)``), its networks
          are not plain names or are bound more than once (``p = torch.compile(p)``), the collector's
          state is saved or loaded, the file reads a transform's running statistics
          (``obs_rms``/``reward_rms``: a loss sharing them would get the CPU copy's), ``copy`` is
          bound to something but the module, the collector runs workers (``MultiSyncCollector``:
          they step pickled copies), or the batch reads cannot be followed.
        * A review marker on such a collector whose policy a function builds with distribution bounds
          on the device (``rules/_lib/collectors.device_bounds``: the policy name's only binding is
          ``policy = make(...)`` or ``policy, critic = make(...)``, ``make`` a ``def`` of this file or
          of a project module it imports, at the top or in a function; in it, or in a function of
          its module it calls by name, a ``"low"``/``"high"`` entry ``x.to(...)`` or a call given
          ``device=``, in a function that names ``TanhNormal``/``TanhDelta``): torchrl's CPU copy
          maps only parameters and buffers, so those bounds stay on the device.
        * The bounds of a torchrl distribution that moves them to its parameters' device itself
          (``BOUNDED``: ``TanhNormal``, ``TanhDelta``) are built on the host:
          ``ProbabilisticActor(..., distribution_class=TanhNormal, distribution_kwargs={"low":
          spec.space.low.to(device), ...})`` → ``"low": spec.space.low.cpu()`` (the spec may be on
          the device); ``torch.as_tensor(x, device=d)`` → ``torch.as_tensor(x, device="cpu")``. The class is the keyword's name
          or a name of the function bound once to one; the callee ``ProbabilisticActor``,
          ``SafeProbabilisticModule`` or tensordict's ``ProbabilisticTensorDictModule`` (by qualified
          name); the kwargs a dict display or a name bound once to one and read nowhere else in the
          function; every bound such a move or a number (``rules/_lib/collectors.host_bounds``); the
          device a variable (for ``.to(d)`` one spelled as a device: ``device``, ``dev``,
          ``cfg.device``, ``cfg["device"]``; a ``"cuda"`` literal is an explicit choice). A policy on the device
          then reads no bound back on the host: neither in a collector's CPU copy (above: torchrl
          copies only parameters and buffers) nor in an eager distribution's ``(high >
          low).all()`` check; a graph compiled for neuron copies a host input to the device itself.
          The collector's marker above then says the helper's port does it.
        * A replay buffer built with ``shared=True`` (handed to another process: a multi-process
          collector's workers extend it) on a device that may be the accelerator gets its storage on
          the CPU where that device is neuron, and each ``x = buffer.sample(...)`` of the function
          that builds it is followed by ``x = x.to(device)``. The storage's device is the
          ``device=`` of a torchrl buffer's ``storage=XStorage(...)``, or the argument a helper
          of the file or of a project module (``make_replay_buffer(..., device=device,
          shared=True)``) passes on as ``device=`` to a call spelled ``...Storage`` (or
          ``partial(...Storage, device=...)``) when it also passes its own ``shared`` to a call
          spelled ``...ReplayBuffer``, and never rebinds that parameter (a helper that does picks
          the device itself: left alone); a storage bound to a name (``storage=s``, ``s =
          LazyTensorStorage(...)`` its only binding) is followed. Samples are moved only for a
          TensorDict buffer (a plain ``ReplayBuffer`` samples what it stores) bound once, in the
          scope that builds it; a line already followed by ``x = x.to(...)`` and a
          ``buffer.sample().to(...)`` are left. A review marker where a sample cannot be followed (a
          use in a nested function, a ``return_info=`` tuple, a ``sample()`` that is not ``x =
          buffer.sample(...)`` on its own line, the buffer handed to a call other than a
          collector's ``replay_buffer=``), where the device is the helper's own accelerator default,
          and where it is an expression a wrap would evaluate twice (``torch.device("cuda")``,
          ``cfg["device"]``).
        * torchrl's ``get_available_device()`` → ``torch.device("neuron:0" if
          torch.accelerator.is_available() else "cpu")`` (a string with ``return_str=True``).
        * torchtune's ``get_dtype(dtype, device=D)`` gets ``torch.device("cpu")`` as its device
          where ``D`` is a ``neuron`` device.
        * torchtune's ``get_memory_stats(device=D)`` under the recipe's ``D.type != "cpu"`` guard:
          the guard becomes ``D.type not in ("cpu", "neuron")`` (memory stats skipped on neuron, as
          the recipe skips them on the CPU). A call with no such guard (the distributed recipes)
          runs only where ``D.type != "neuron"``: added to the ``if flag:`` whose whole body it is,
          or an ``if`` around it and the statements right after it that read what it assigned;
          a review marker where a later statement reads those names.
        * torchtune's ``cleanup_before_training()`` alone on its line runs only where
          ``torch.accelerator.current_accelerator()`` is not a neuron device (on a Trainium host it
          empties ``torch.cpu``'s cache, which does not exist).
        * torchtune's ``get_device(device=D)`` in a file that starts a process group (a torchrun
          recipe) → ``torch.device(f"neuron:{os.environ['LOCAL_RANK']}") if str(D) == "neuron" and
          "LOCAL_RANK" in os.environ else get_device(device=D)`` (a ``"cuda"`` literal D: its
          port, and only the LOCAL_RANK test); a review marker where D is missing, ``None`` or
          an expression other than a name, attribute or literal.
          torchtune's ``CheckpointClient(cfg)`` there (it calls ``get_device(cfg.device)``
          itself) gets ``OmegaConf.merge(cfg, {"device": str(self._device)}) if
          str(self._device).startswith("neuron:") else cfg`` in a recipe that holds
          ``self._device``; a marker elsewhere.
        * torchtune's ``compile_model(...)`` / ``compile_loss(...)`` statement gets, before it, the
          neuron backend as the default of the variable they read, on a neuron host only:
          ``if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron":``
          ``os.environ.setdefault("TORCH_COMPILE_BACKEND", "neuron")``. A file that names
          ``TORCH_COMPILE_BACKEND`` itself chooses its backend and is left alone.

    Why:
        torchrl 0.14.1's collectors pick a sync function per device and raise "Non supported
        device" for anything but cuda/mps/npu/cpu when none of CUDA, MPS, NPU is present
        (``torchrl/collectors/_single.py:1005-1023``): every collector device ported to
        ``neuron`` crashes on a Trainium host. torchrl supports the split kept here: a policy on
        the accelerator with a CPU collector (its own ``dqn_cartpole.py`` passes ``device="cpu"``
        with the model on CUDA; ``_base.py:757-828`` makes the CPU copy). The copy is a deep copy
        with the weights on the policy device (``_base.py:805-824``); the iterator never syncs it
        (``_single.py:1774-1860``), ``update_policy_weights_()`` copies the policy's weights in
        (``_single.py:1708-1736``): without the call an on-policy script trains the accelerator's
        policy on rollouts of the initial one, where the original acted with the policy it
        trained (measured with torchrl 0.14.1 on CartPole, a copy forced by ``policy_device=cpu:0``:
        the losses leave the original's at the second batch without the sync, and match it at every
        batch with it, before ``next()`` or at the end of the loop). The test around it keeps the
        CUDA and CPU programs as they were (no copy there: the call would copy the weights onto
        themselves, bump the policy version, and send them to a multi-process collector's
        workers); a function or ``RandomPolicy`` (not an ``nn.Module``,
        ``modules/tensordict_module/exploration.py:771``) has no weights and the call raises
        ("Collector cannot update policy weights ...", ``_single.py:1727``). A collector with a
        replay buffer extends it and yields None (``_single.py:1846-1853``,
        ``_multi_sync.py:319-320``). A buffer's storage is pickled for another process only on
        cpu, cuda or meta (``torchrl/data/replay_buffers/storages/tensor.py:510-518``: "The storage
        must be place in shared memory or memmapped"): a ported ``cuda`` storage shared with a
        collector's workers crashes at the collector's start (sac-async, found by ``porter check``);
        on the CPU torchrl puts it in shared memory, and a sample moved to the device is what the
        CUDA storage gave the script. ``get_available_device``
        (``torchrl/_utils.py:1197``) knows CUDA, NPU and MPS and returns the CPU on Trainium, so
        the port has to pick the accelerator itself (the CPU where there is none, as before).
        TanhNormal and TanhDelta move their bounds to their parameters' device themselves
        (``torchrl/modules/distributions/continuous.py:436-443, 823-824``); a dict of kwargs is
        neither a parameter nor a buffer, so the collector's CPU copy keeps device bounds on the
        device and reads them back at each env step (``a2c_mujoco``: 129 host syncs per step in
        ``porter check``, 1 with them on the host). Bounds on the host give the same numbers: an
        eager distribution copies them to its parameters' device, and ``torch.compile`` on
        TorchNeuron copies a CPU input to the device itself (neuron-facts, from
        ``examples/compile/QUICKSTART.md``).
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
        torchtune's ``compile_model``/``compile_loss`` call ``torch.compile(backend=os.environ.get(
        "TORCH_COMPILE_BACKEND", "inductor"))`` (``torchtune/training/_compile.py:47,73``): with the
        config's ``compile: True`` a Trainium host compiles the neuron tensors with Inductor, which
        TorchNeuron does not use (AWS Neuron docs, about torch.compile); its backend is
        ``"neuron"``. ``setdefault`` keeps a backend the user set in the environment; the host test
        keeps Inductor on CUDA and CPU hosts, as the original had it.
        torchtune's ``get_device`` fills in the index only for cuda/npu/xpu and, where LOCAL_RANK
        is set, raises unless the index equals it (``torchtune/utils/_device.py:62-96,131-139``):
        ``neuron`` under torchrun always raised. TorchNeuron's index of a rank's core is its local
        rank (neuron-facts §1.2, ``torch_neuronx/csrc/core/NeuronDevice.cpp``). The port builds that device
        without calling ``get_device``, whose check allocates on it: a recipe that calls it
        before ``init_process_group`` (``full_finetune_distributed.py:128,144``) would start
        the Neuron runtime first, which TorchNeuron refuses. Without LOCAL_RANK (one process)
        torchtune's own call runs, as before.

    Before:
        kwargs = {"low": spec.space.low.to(device), "high": spec.space.high.to(device)}
        actor = ProbabilisticActor(net, distribution_class=TanhNormal, distribution_kwargs=kwargs)
        buffer = make_replay_buffer(cfg.batch_size, device=device, shared=True)
        batch = buffer.sample()
        collector = Collector(env, policy, device=cfg.env.device, storing_device=cfg.train.device)
        for i, batch in enumerate(collector):
            loss_module.value_estimator(batch)
        rollouts = Collector(env, actor, device=device)
        stream = iter(rollouts)
        for step in range(len(rollouts)):
            data = next(stream)
            update(advantage(data))

        device = torch.device(cfg.device) if cfg.device else get_available_device()
        self._device = utils.get_device(device=cfg.device)  # in a torchrun recipe
        self._dtype = training.get_dtype(cfg.dtype, device=self._device)
        if self._device.type != "cpu":
            memory_stats = training.get_memory_stats(device=self._device)

    After:
        kwargs = {"low": spec.space.low.cpu(), "high": spec.space.high.cpu()}
        actor = ProbabilisticActor(net, distribution_class=TanhNormal, distribution_kwargs=kwargs)
        buffer = make_replay_buffer(cfg.batch_size, device="cpu" if str(device).startswith("neuron") else device, shared=True)
        batch = buffer.sample()
        batch = batch.to(device)
        collector = Collector(env, policy, device="cpu" if str(cfg.env.device).startswith("neuron") else cfg.env.device, storing_device="cpu" if str(cfg.train.device).startswith("neuron") else cfg.train.device)
        for i, batch in enumerate(collector):
            batch = batch.to(cfg.train.device)
            loss_module.value_estimator(batch)
        rollouts = Collector(env, actor, device="cpu" if str(device).startswith("neuron") else device)
        stream = iter(rollouts)
        for step in range(len(rollouts)):
            if str(device).startswith("neuron"):
                rollouts.update_policy_weights_()
            data = next(stream)
            data = data.to(device)
            update(advantage(data))

        device = torch.device(cfg.device) if cfg.device else torch.device("neuron:0" if torch.accelerator.is_available() else "cpu")
        self._device = torch.device(f"neuron:{os.environ['LOCAL_RANK']}") if str(cfg.device) == "neuron" and "LOCAL_RANK" in os.environ else utils.get_device(device=cfg.device)
        self._dtype = training.get_dtype(cfg.dtype, device=torch.device("cpu") if str(self._device).startswith("neuron") else self._device)
        if self._device.type not in ("cpu", "neuron"):
            memory_stats = training.get_memory_stats(device=self._device)
        if self._device.type == "neuron":
            os.environ.setdefault("TORCH_COMPILE_BACKEND", "neuron")
        training.compile_model(model)

    Safety:
        Review. Callees by qualified name (the table ``COLLECTORS``/``CHOOSERS``/``BF16_CHECKS``,
        each with its source line). Value heuristic: a device argument that is a name or an
        attribute may hold the accelerator and is wrapped (a value that is never ``neuron`` is
        kept by the test); a call or other expression is left alone (it would be evaluated
        twice); a ``"cpu"`` literal or ``None`` is kept, and so is a name every binding of which,
        in the scope it resolves to (libcst's scopes), is ``"cpu"`` or ``torch.device("cpu")``
        (a parameter, loop target or any other value may hold neuron). Batch reads are followed
        only in the function that builds ``collector = ...``, with at most one loop over it, and
        only where every use of the collector (and of ``it = iter(collector)``) is a read, a
        binding, ``len()`` or an attribute (``collector.shutdown()``); a collector returned or
        handed to another function gets the marker. The sync is left out where the file calls
        ``<x>.update_policy_weights_(...)`` anywhere (a call in the tree, not a comment; it may
        be another collector's: then nothing says this one is synced). The move and the sync
        test the name where the loop runs: a name rebound between the collector and the loop is
        read with its later value. The policy copy is a different object: code that reads the
        collector's policy between ``update_policy_weights_()`` calls sees the weights of the
        last call.
        A shared buffer's storage device and ``shared`` flag are followed into a helper by
        spelling (``...Storage``, ``...ReplayBuffer``; the helper found by ``project_function``),
        and its samples only in the function that builds it, by name (``x = buffer.sample()``;
        attribute reads and calls such as ``buffer.extend(...)`` and a ``replay_buffer=`` argument
        of a callee spelled ``...collector...`` are not samples).
        The memory-stats guard is found by spelling of the call's own device argument:
        ``D.type != "cpu"`` (or the port's ``D.type != "neuron"``) in an enclosing ``if`` (alone or
        in an ``and``); on neuron the recipe then logs no memory. The statements wrapped with the
        call are those right after it that name what it assigned (a bare name anywhere in them).
        The compile backend follows the recipe's device where the call is in a method of a class
        whose ``__init__`` sets ``self._device`` to ``torch.device(...)`` or torchtune's
        ``get_device(...)`` (torchtune's recipes: the model and loss are put on it), else the
        host: then a script run with ``device=cpu`` and ``compile=True`` on a Trainium host
        compiles CPU tensors with the neuron backend. The variable is set for the process (later
        torchtune compiles read it too), so a block gets the line once, before its first call.
    """

    code: ClassVar[str] = "NRN116"
    name: ClassVar[str] = "library-devices"
    summary: ClassVar[str] = ("devices torchrl collectors / shared replay buffers / torchtune's bf16 check reject -> CPU; get_available_device() -> "
                              "accelerator; torchtune's memory stats skipped on neuron")
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = ("Collector", "get_available_device", "get_dtype", "get_memory_stats",
                                           "cleanup_before_training", "get_device", "compile_model", "compile_loss",
                                           "CheckpointClient", "shared=True",  # PEP 8's spelling of the keyword
                                           "TanhNormal", "TanhDelta")
    order: ClassVar[int] = 15  # after device_strings (10): a "cuda" it made "neuron" is seen as the port's

    @classmethod
    def may_edit(cls, facts: SourceFacts) -> bool:
        """Every edit is made from ``visit_Call`` on a call whose qualified name is in
        COLLECTORS, CHOOSERS, BF16_CHECKS, MEMORY_STATS, CLEANUPS, DEVICE_GETTERS, COMPILERS or CONFIG_DEVICE_READERS (each part of it then an
        identifier of the file), on a call given ``shared=True`` (a replay buffer shared between processes;
        the trigger is that spelling, without spaces around ``=``), or on a call given a distribution class whose
        qualified name is in BOUNDED."""
        return any(facts.spells(name) for table in (COLLECTORS, CHOOSERS, BF16_CHECKS, MEMORY_STATS, CLEANUPS, DEVICE_GETTERS,
                                                    COMPILERS, CONFIG_DEVICE_READERS, BOUNDED)
                   for name in table) or any(
            kw.arg == "shared" and isinstance(kw.value, ast.Constant) and kw.value.value is True for kw in facts.of(ast.keyword))

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._backend_blocks: list[cst.CSTNode] = []  # blocks given the compile-backend line (held, compared by `is`)

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified(node.func)
        collector = next((COLLECTORS[n] for n in names if n in COLLECTORS), None)
        if collector is not None:
            self._collector(node, collector)
        elif shared(node):
            self._shared_buffer(node)
        elif any(n in CHOOSERS for n in names):
            self._chooser(node, next(CHOOSERS[n] for n in names if n in CHOOSERS))
        elif any(n in BF16_CHECKS for n in names):
            self._bf16_check(node, next(BF16_CHECKS[n] for n in names if n in BF16_CHECKS))
        elif any(n in MEMORY_STATS for n in names):
            self._memory_stats(node, next(MEMORY_STATS[n] for n in names if n in MEMORY_STATS))
        elif any(n in CLEANUPS for n in names):
            self._cleanup(node, next(CLEANUPS[n] for n in names if n in CLEANUPS))
        elif any(n in DEVICE_GETTERS for n in names) and self._distributed() and not self._in_torchtune():
            self._device_getter(node, next(DEVICE_GETTERS[n] for n in names if n in DEVICE_GETTERS))
        elif any(n in COMPILERS for n in names):
            self._compile_backend(node, next(COMPILERS[n] for n in names if n in COMPILERS))
        elif any(n in CONFIG_DEVICE_READERS for n in names) and self._distributed() and not self._in_torchtune():
            self._config_reader(node, next(CONFIG_DEVICE_READERS[n] for n in names if n in CONFIG_DEVICE_READERS))
        elif keyword(node, "distribution_class") is not None and keyword(node, "distribution_kwargs") is not None:
            self._host_bounds(node)

    def _in_torchtune(self) -> bool:
        """The file is torchtune's own (``torchtune/<subpackage>/...``, not a clone's ``recipes/``):
        its ``get_device`` is ported with it and fills in the index there."""
        parts = PurePath(self.context.path).parts[:-1]
        return any(part == "torchtune" and parts[i + 1] in _TORCHTUNE_PACKAGES for i, part in enumerate(parts[:-1]))

    def _distributed(self) -> bool:
        """The file starts a process group (a torchrun recipe)."""
        return any(
            isinstance(node, cst.Call) and self.matches(node.func, *_INIT_PROCESS_GROUP)
            for node in child_index(self).walk(self.context.module)
        )

    def _cleanup(self, node: cst.Call, source: str) -> None:
        """``training.cleanup_before_training()`` alone on its line: run only where the host is not
        Trainium (torchtune empties torch.cpu's cache there, which does not exist); the garbage
        collection it also does is not needed for the program's numbers."""
        line = self.statement_of(node)
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], cst.Expr)
                and line.body[0].value is node):
            self.mark(node, f"torchtune's cleanup_before_training empties torch.cpu's cache on Trainium ({source}), which "
                      "does not exist: skip it where the device is neuron")
            return
        torch, imports = torch_ref(self.context.module)
        test = _HOST_NOT_NEURON.format(torch=torch)
        for ancestor in self.ancestors(line):
            if isinstance(ancestor, cst.If) and test in self.context.module.code_for_node(ancestor.test):
                return  # the port's own guard (a fixed point)
        self.replace(line, wrapped_in_if(cst.parse_expression(test)), f"torchtune's cleanup_before_training empties torch.cpu's cache on a Trainium host "
                     f"({source}): skipped there", imports=imports)

    # ------------------------------------------------------------------ torchrl collectors
    def _collector(self, node: cst.Call, source: str) -> None:
        torch, _ = torch_ref(self.context.module)
        wrapped: dict[str, cst.BaseExpression] = {}
        for name in _COLLECTOR_DEVICES:
            arg = keyword(node, name)
            if arg is None or not self._may_be_accelerator(arg.value) or bound_to_cpu(self, arg.value):
                continue
            wrapped[name] = arg.value
            new = self._cpu_where_neuron(arg.value, '"cpu"')
            self.replace(arg, _with_value(new),
                         f"torchrl's collector rejects a neuron {name} ({source}): the CPU where it is neuron")
        if not wrapped:
            return
        # the env goes where env_device= says, else device= (modules/inference_server/_config.py:193-203)
        env_moved = "env_device" in wrapped or ("device" in wrapped and keyword(node, "env_device") is None)
        shared = self._env_networks(node) if env_moved else None
        collector, reads = self._reads(node)
        if shared is not None:
            env_on = wrapped.get("env_device", wrapped.get("device"))
            single = any(n in SINGLE_COLLECTORS for n in self.qualified(node.func))
            if env_on is None or not single or not self._copy_env_networks(node, shared, env_on, collector, reads):
                name, source = shared.name, shared.source
                self.mark(node, f"the env this collector runs carries {name}, whose networks a loss trains ({source}); the "
                          "collector moves its env to the CPU (torchrl/collectors/_single.py:1223-1224), those networks "
                          "with it, away from the loss on the device: the env needs its own CPU copy of them, refreshed after each "
                          "update as the collector's policy copy is")
        stored_on = self._stored_on(node, wrapped)
        if stored_on is not None and not fills_buffer(node):
            self._move_batches(node, reads, self._ported_text(stored_on, torch))
        # torchrl's policy device is policy_device=, else device= (modules/inference_server/_config.py:191-192)
        policy_on = wrapped.get("policy_device") if keyword(node, "policy_device") is not None else wrapped.get("device")
        if policy_on is None or not copies_policy(self, node):
            return  # no CPU copy of a policy
        if not self.analysis(PolicySyncs).found:
            self._sync_policy(node, collector, reads, policy_on)
        bounds = device_bounds(self, node)
        if bounds is not None:
            where, code, kept = bounds
            fix = ("porter's port of that module keeps them on the host (NRN116 there): port it with this file" if kept else
                   "build them on the host (TanhNormal and TanhDelta move their bounds to their parameters' device themselves)")
            self.mark(node, f"the policy's distribution bounds are built on the device ({where}: `{code}`): this "
                      f"collector's CPU copy of the policy keeps them there (torchrl maps only its parameters and "
                      f"buffers, {_POLICY_COPY}), and a distribution built with them reads them back at every env step; {fix}")

    def _host_bounds(self, node: cst.Call) -> None:
        """A bounded torchrl distribution's bounds moved to a device (``"low": spec.low.to(device)``) are
        built on the host: the distribution moves them to its parameters' device itself."""
        scope: cst.CSTNode = enclosing_function(self, node) or self.context.module
        bounds = host_bounds(node, scope, child_index(self).walk, qualified_names(self))
        if not bounds:
            return
        for bound in bounds:
            self.replace(bound.entry.value, bound.host, f"a bounded torchrl distribution moves its bounds to its parameters' "
                         f"device itself ({_BOUNDS_MOVED}): they are built on the host")
        self.mark(bounds[0].entry, f"the distribution's bounds are built on the host: torchrl moves them to its parameters' "
                  f"device itself ({_BOUNDS_MOVED}), and a graph compiled for neuron copies a host input to the device "
                  f"(neuron-facts: torch.compile auto-copies CPU inputs); on the device, a collector's CPU copy of the policy "
                  f"(NRN116 puts a neuron collector on the CPU) reads them back at every env step ({_POLICY_COPY}), and "
                  "an eager distribution reads `(high > low).all()` back at each call")

    def _shared_buffer(self, node: cst.Call) -> None:
        """A replay buffer built with ``shared=True`` on a device that may be neuron: its storage on the
        CPU there (torchrl pickles only a cpu/cuda/meta storage for another process), each sample moved
        back to that device where the function that builds it samples it."""
        found = storage_device(self, node)
        if found is None or (found.arg is not None and never_accelerator(self, found.arg.value)):
            return
        why = f"torchrl shares a replay buffer's storage with other processes only on cpu/cuda ({_SHARED_STORAGE})"
        arg = found.arg
        if arg is not None and _cpu_wrapped(arg.value):
            return  # the port's own wrap (a fixed point)
        if arg is None or not self._may_be_accelerator(arg.value):
            # the callee's own default, or an expression a wrap would evaluate twice (torch.device("cuda"), cfg["device"])
            self.mark(node, f"{why}: where this shared replay buffer's storage device is neuron, build the storage on the CPU "
                      "and move each sample to the device (batch = batch.to(device))")
            return
        torch, _ = torch_ref(self.context.module)
        target = self._ported_text(arg.value, torch)
        self.replace(arg, _with_value(self._cpu_where_neuron(arg.value, '"cpu"')), f"{why}: the CPU where its device is neuron")
        assign = self.parent(node)
        name = (assign.targets[0].target if isinstance(assign, cst.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name) else None)
        bindings = name_bindings(self, name) if name is not None else None
        found_samples = (samples(self, enclosing_function(self, node) or self.context.module, name.value)
                         if name is not None and bindings is not None and len(bindings) == 1 and found.tensordicts else None)
        if found_samples is None or not found_samples.complete or target is None:
            self.mark(node, f"this shared replay buffer now stores on the CPU: move each sample to {target or 'the device'} "
                      "where the script reads it (batch = batch.to(device))")
        for batch, line in found_samples.lines if found_samples is not None and target is not None else ():
            self.insert_after(line, [cst.parse_statement(f"{batch} = {batch}.to({target})")],
                              f"the shared replay buffer stores on the CPU: each sample moved to {target}")

    def _env_networks(self, node: cst.Call) -> _Carried | None:
        """A transform holding trained networks (``ENV_NETWORK_TRANSFORMS``) in the collector's env
        argument: called there (``make_env(..., RNDTransform(...))``) or a name the function binds to
        such a call only (``make_env(..., rnd_transform=rnd_transform)``), or one a name of the env
        argument is bound to (``env = TransformedEnv(base, bonus)``)."""
        arg = keyword(node, "create_env_fn") or keyword(node, "env") or positional(node, 0)
        if arg is None:
            return None
        return self._carried(arg.value, follow=True)

    def _carried(self, value: cst.BaseExpression, follow: bool) -> _Carried | None:
        """The transform in ``value``: a call, a name bound only to such calls, and (``follow``) a
        name bound only to calls that carry one in their arguments (``env = TransformedEnv(base,
        bonus)``; one level)."""
        for part in child_index(self).find(value, cst.Call, cst.Name):
            if isinstance(part, cst.Call):
                source = self._network_source(part)
                if source is not None:
                    return _Carried(self.context.module.code_for_node(part.func), source)
            elif isinstance(part, cst.Name):
                values = name_bindings(self, part) or ()
                sources = [self._network_source(v) if isinstance(v, cst.Call) else None for v in values]
                if sources and sources[0] is not None and all(sources):
                    return _Carried(part.value, sources[0], cast(cst.Call, values[0]) if len(values) == 1 else None)
                if follow and values and all(isinstance(v, cst.Call) for v in values):
                    inner = [self._carried(cast(cst.Call, v), follow=False) for v in values]
                    if inner[0] is not None and all(found == inner[0] for found in inner):
                        return dataclasses.replace(inner[0], via=part.value)
        return None

    def _copy_env_networks(self, node: cst.Call, carried: _Carried, env_on: cst.BaseExpression,
                           collector: str | None, reads: list[BatchRead] | None) -> bool:
        """The transform bound to ``name`` (``bonus = RNDTransform(target_network=t, predictor_network=p,
        ...)``, its only binding, in the collector's function) gets its own copies of the networks where
        the env device is neuron (``copy.deepcopy(p) if str(device).startswith("neuron") else p``): the
        collector moves those to the CPU, the loss keeps training ``p`` on the device. Both copies are
        refreshed from the loss's networks before each batch is collected (before ``x = next(it)``;
        before a ``for`` loop over the collector and at the end of its body), so each batch's
        intrinsic reward comes from the networks as trained (or loaded) so far, as in the original,
        where the env and the loss share them. The target is frozen as the transform froze the shared one
        (``copy.deepcopy(t.requires_grad_(False))``). Only for a single-process ``Collector`` (a
        multi-process collector pickles its env to workers that a refresh here does not reach).
        False (the caller marks) where this cannot be placed: the transform called in the argument,
        networks that are not plain names or that the file binds more than once (``p =
        torch.compile(p)``: the env would get another module, or other state-dict keys), the
        transform's name used anywhere but in the collector's env argument (``bonus.predictor_network``
        handed to a loss, ``bonus.load_state_dict(...)``: they would reach the copy), a collector
        whose state is saved or loaded, a file that reads a transform's running statistics
        (``obs_rms``/``reward_rms``, which the copy does not share with the loss), a ``copy`` name
        bound to anything but the module, or batch reads not followed."""
        name, via, transform = carried.name, carried.via, carried.transform
        if transform is None:  # called in the argument, or bound more than once
            return False
        scope: cst.CSTNode = enclosing_function(self, node) or self.context.module
        index = child_index(self)
        networks = [keyword(transform, "target_network") or positional(transform, 0),
                    keyword(transform, "predictor_network") or positional(transform, 1)]
        if any(arg is None or not isinstance(arg.value, cst.Name) or len(name_bindings(self, arg.value) or ()) != 1
               for arg in networks):
            return False
        if any(isinstance(n, cst.Attribute) and n.attr.value in ("obs_rms", "reward_rms") for n in index.walk(self.context.module)):
            return False
        counts = name_counts(index.walk(scope))
        # the transform's name, and the env's it is reached through: each bound and used once in this scope
        if any(held is not None and counts.get(held) != 2 for held in (name, via)):
            return False
        if collector is None or any(isinstance(n, cst.Attribute) and n.attr.value in ("state_dict", "load_state_dict")
                                    and dotted(n.value) == collector for n in index.walk(scope)):
            return False
        deepcopy, imports = _deepcopy_name(self)
        if deepcopy is None or reads is None or any(read.statement is None for read in reads):
            return False
        loops = [read.statement for read in reads if isinstance(read.statement, cst.For)]
        if any(_suite_body(read) for read in reads) or any(continues(self, loop) for loop in loops):
            return False
        test = "" if string_value(env_on) is not None else f'str({dotted(env_on)}).startswith("neuron")'
        if test and dotted(env_on) is None:
            return False
        target, predictor = (cast(cst.Arg, arg) for arg in networks)
        why = (f"the collector moves its env's {_RND_TRANSFORM} networks to the CPU with the env "
               "(torchrl/collectors/_single.py:1223-1224), away from the loss that trains them on the device: the env gets "
               "its own copies")
        for arg in (target, predictor):
            network = cast(cst.Name, arg.value).value
            # the transform froze the shared target (torchrl/envs/transforms/rnd.py:147): freeze the loss's too
            copied = f"{deepcopy}({network}.requires_grad_(False))" if arg is target else f"{deepcopy}({network})"
            self.replace(arg, arg.with_changes(value=cst.parse_expression(f"{copied} if {test} else {network}" if test else copied)),
                         why, imports=imports)
        refresh = [f"{name}.{attr}.load_state_dict({cast(cst.Name, arg.value).value}.state_dict())"
                   for attr, arg in (("target_network", target), ("predictor_network", predictor))]
        code = f"if {test}:\n" + "".join(f"    {line}\n" for line in refresh) if test else "".join(f"{line}\n" for line in refresh)
        message = (f"the env's copies of the networks are refreshed from the ones the loss trains before each batch is "
                   f"collected ({_RND_TRANSFORM} computes the intrinsic reward with them at every env step)")
        self._before_each_batch(reads, code, message, before_loop=True)  # the first batch: networks changed since the copy
        self.mark(transform, f"the env's {_RND_TRANSFORM} gets its own copies of the target and predictor networks where the "
                  "env device is neuron (the collector moves them to the CPU with the env, "
                  "torchrl/collectors/_single.py:1223-1224), refreshed from the loss's before each batch")
        return True

    def _network_source(self, call: cst.Call) -> str | None:
        return next((ENV_NETWORK_TRANSFORMS[q] for q in self.qualified(call.func) if q in ENV_NETWORK_TRANSFORMS), None)

    @staticmethod
    def _stored_on(node: cst.Call, wrapped: dict[str, cst.BaseExpression]) -> cst.BaseExpression | None:
        """The wrapped value the batches were stored on: storing_device=, else device=, else the
        env/policy device where both are the same (modules/inference_server/_config.py:193-203)."""
        if keyword(node, "storing_device") is not None:
            return wrapped.get("storing_device")
        if keyword(node, "device") is not None:
            return wrapped.get("device")
        env, policy = keyword(node, "env_device"), keyword(node, "policy_device")
        if env is not None and policy is not None and dotted(env.value) is not None and dotted(env.value) == dotted(policy.value):
            return wrapped.get("env_device")
        return None

    def _reads(self, node: cst.Call) -> tuple[str | None, list[BatchRead] | None]:
        """The collector's name (``name = Collector(...)``) and where that function reads its batches."""
        assign = self.parent(node)
        name = dotted(assign.targets[0].target) if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None
        if name is None:
            return None, None
        scope: cst.CSTNode = enclosing_function(self, node) or self.context.module
        return name, batch_reads(self, scope, name)

    def _move_batches(self, node: cst.Call, reads: list[BatchRead] | None, target: str | None) -> None:
        if target is None or reads is None or any(_suite_body(read) for read in reads):
            self.mark(node, f"the collector now stores its batches on the CPU: move each batch to {target or 'the device'} "
                      "where the script uses it (batch = batch.to(device))")
            return
        message = f"the collector stores on the CPU: each batch moved to {target}"
        device = cst.parse_expression(target)
        for read in reads:
            if read.call is not None:  # f(next(it)): the batch moved where it is read
                if isinstance(self.parent(read.call), cst.Expr):
                    continue  # next(it) as a statement: the batch is dropped, nothing reads it
                self.replace(read.call, lambda n: _moved(n, device), message)
                continue
            move = [cst.parse_statement(f"{read.batch} = {read.batch}.to({target})")]
            if isinstance(read.statement, cst.For):
                self.insert_before(_body(read.statement)[0], move, message)
            elif read.statement is not None:
                self.insert_after(read.statement, move, message)

    def _sync_policy(self, node: cst.Call, collector: str | None, reads: list[BatchRead] | None,
                     policy_on: cst.BaseExpression) -> None:
        """The collector acts with a CPU copy of the policy, refreshed only by update_policy_weights_():
        sync it before each batch is collected, as the original acted with the trained policy."""
        loops = [read.statement for read in reads or () if isinstance(read.statement, cst.For)]
        assign = self.parent(node)
        sole = isinstance(assign, cst.Assign) and sole_binding(self, assign.targets[0].target, node)
        if (collector is None or reads is None or not sole or any(_suite_body(read) for read in reads)
                or any(read.statement is None for read in reads) or any(continues(self, loop) for loop in loops)):
            self.mark(node, f"the collector runs a CPU copy of the policy ({_POLICY_COPY}): "
                      "call collector.update_policy_weights_() after each optimizer step")
            return
        call = f"{collector}.update_policy_weights_()"
        if string_value(policy_on) is None:  # a copy only where the port made the policy device the CPU
            call = f'if str({dotted(policy_on)}).startswith("neuron"):\n    {call}'
        message = (f"the collector acts with a CPU copy of the policy ({_POLICY_COPY}) that only "
                   "update_policy_weights_() refreshes (torchrl/collectors/_single.py:1708-1736): synced before each batch")
        self._before_each_batch(reads, call + "\n", message)

    def _before_each_batch(self, reads: list[BatchRead], code: str, message: str, before_loop: bool = False) -> None:
        """``code`` (statements) before each batch is collected: before ``x = next(it)``, at the end of
        the body of a ``for`` over the collector (the loop's next read follows), and, ``before_loop``,
        before that loop too (its first read). Two reads in one statement get it once."""
        synced: set[int] = set()
        for read in reads:
            statement = read.statement
            if statement is None or id(statement) in synced:
                continue
            synced.add(id(statement))
            if isinstance(statement, cst.For):
                if before_loop:
                    self.insert_before(statement, list(cst.parse_module(code).body), message)
                self.insert_after(_body(statement)[-1], list(cst.parse_module(code).body), message)
            else:
                self.insert_before(statement, list(cst.parse_module(code).body), message)

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

    # ------------------------------------------------------------------ torchtune get_device under torchrun
    def _device_getter(self, node: cst.Call, source: str) -> None:
        """``get_device(device=D)`` in a torchrun recipe: the rank's own ``neuron:{LOCAL_RANK}``
        where D is ``neuron`` and LOCAL_RANK is set (torchtune's own test of a distributed run),
        torchtune's call otherwise. A D that is not a name, an attribute or a literal (it would be
        evaluated twice), or no D (torchtune then picks the host's device: the CPU on Trainium)
        gets a marker."""
        if self._ported_getter(node):
            return  # the port's own fallback branch: a fixed point
        arg = keyword(node, "device") or positional(node, 0)
        why = (f"torchtune's get_device rejects an unindexed neuron device under torchrun ({source}: the index must "
               "equal LOCAL_RANK, and only cuda/npu/xpu get it filled in)")
        unknown = arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None")
        if arg is None or unknown or (string_value(arg.value) is None and not self._may_be_accelerator(arg.value)):
            host = "; with no device it takes the host's, the CPU on Trainium" if unknown else ""
            self.mark(node, f"{why}{host}: pass f\"neuron:{{LOCAL_RANK}}\" where the device is neuron")
            return
        literal = string_value(arg.value)
        if literal is not None and literal not in ("cuda", "neuron"):
            return  # an indexed or other explicit device: the user's choice, rejected on CUDA too
        torch, imports = torch_ref(self.context.module)
        rank = f'{torch}.device(f"neuron:{{os.environ[\'LOCAL_RANK\']}}")'
        accelerator = self.options.style == "accelerator"

        def indexed(updated: cst.CSTNode) -> cst.CSTNode:
            call = cast(cst.Call, updated)
            given = keyword(call, "device") or positional(call, 0)
            assert given is not None
            value = given.value
            if string_value(value) == "cuda":  # still the original's literal (a positional argument): this port's
                value = (accelerator_string(value, torch, ACCELERATOR_TYPE_OR_CUDA) if accelerator
                         else neuron_string(value))
                call = call.with_changes(args=[a.with_changes(value=value) if a is given else a for a in call.args])
            if string_value(value) == "neuron":
                test = '"LOCAL_RANK" in os.environ'
            else:
                test = f'str({self.context.module.code_for_node(value)}) == "neuron" and "LOCAL_RANK" in os.environ'
            return cst.parse_expression(f"{rank} if {test} else {self.context.module.code_for_node(call)}")

        self.replace(node, indexed, f"{why}: neuron:LOCAL_RANK under torchrun, TorchNeuron's index for the rank (and no "
                     "device touched before init_process_group)", imports=(*imports, ImportSpec("os")))

    def _config_reader(self, node: cst.Call, source: str) -> None:
        """``CheckpointClient(cfg)`` in a torchrun recipe that holds ``self._device``: the config
        with the recipe's device where that is an indexed neuron device (the port's LOCAL_RANK
        device above), the recipe's config otherwise."""
        arg = positional(node, 0)
        if arg is not None and isinstance(arg.value, cst.IfExp) and "OmegaConf.merge" in self.context.module.code_for_node(arg.value):
            return  # the port's own config (a fixed point)
        why = f"torchtune's CheckpointClient calls get_device(cfg.device) ({source}), which rejects an unindexed neuron device under torchrun"
        statement = self.statement_of(node)
        if arg is None or not isinstance(arg.value, cst.Name) or statement is None or not self._recipe_device(statement):
            self.mark(node, f"{why}: give it a config whose device is neuron:{{LOCAL_RANK}}")
            return
        cfg = arg.value.value
        new = cst.parse_expression(f'OmegaConf.merge({cfg}, {{"device": str({_RECIPE_DEVICE})}}) '
                                   f'if str({_RECIPE_DEVICE}).startswith("neuron:") else {cfg}')
        self.replace(arg, lambda a: cast(cst.Arg, a).with_changes(value=new),
                     f"{why}: the config with the recipe's neuron:LOCAL_RANK device", imports=(ImportSpec("omegaconf", "OmegaConf"),))

    def _ported_getter(self, node: cst.Call) -> bool:
        """The call is the ``else`` of the port's ``torch.device(f"neuron:{...LOCAL_RANK...}") if ... else``."""
        parent = self.parent(node)
        return (isinstance(parent, cst.IfExp) and parent.orelse is node
                and "LOCAL_RANK" in self.context.module.code_for_node(parent.test))

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
        if in_kept_cuda_branch(self, node):
            return  # under a `device.type == "cuda"` guard the port keeps: never reached on neuron
        guard = self._cpu_guard(node, device)
        if guard is _PORTED:
            return  # the guard already skips neuron (a fixed point)
        if guard is None:
            if not self._skip_on_neuron(node, device, source):
                self.mark(node, f"torchtune's get_memory_stats reads torch.cpu on Trainium ({source}: its device namespace "
                          "knows cuda/npu/xpu only): skip it where the device is neuron")
            return
        self.replace(guard, cst.parse_expression(f'{device}.type not in ("cpu", "neuron")'),
                     f"torchtune's get_memory_stats reads torch.cpu on Trainium ({source}): memory stats skipped on "
                     "neuron, as the recipe skips them on the CPU")

    def _skip_on_neuron(self, node: cst.Call, device: str, source: str) -> bool:
        """A call with no device guard (torchtune's distributed recipes: they never run on the
        CPU): the statement that makes it, with the statements right after it that read what it
        assigned (``memory_stats = get_memory_stats(...)`` then ``log_memory_stats(memory_stats)``),
        runs only where ``D.type != "neuron"``: an ``if`` whose whole body they are gets the test
        added (``if flag and D.type != "neuron":``), else they are wrapped in one. Exact on every
        host but Trainium, where the stats cannot be read. False (a marker instead) where a later
        statement of the block, or a non-simple statement, reads the assigned names."""
        line = self.statement_of(node)
        block = self.parent(line)
        if not isinstance(line, cst.SimpleStatementLine) or not isinstance(block, cst.IndentedBlock):
            return False
        if not all(isinstance(small, (cst.Expr, cst.Assign)) for small in line.body):
            return False  # a `return` of the stats: a caller reads them (a marker)
        held = {t.target.value for small in line.body if isinstance(small, cst.Assign)
                for t in small.targets if isinstance(t.target, cst.Name)}
        position = next(i for i, statement in enumerate(block.body) if statement is line)
        run: list[cst.BaseStatement] = [line]
        rest = list(block.body[position + 1:])
        while (held and rest and isinstance(rest[0], cst.SimpleStatementLine) and not rest[0].leading_lines
               and _reads(self, rest[0], held)):
            run.append(rest.pop(0))  # (a statement with its own comment lines ends the run: see wrapped_in_if)
        if held and any(_reads(self, statement, held) for statement in rest):
            return False
        test = f'{device}.type != "neuron"'
        message = (f"torchtune's get_memory_stats reads torch.cpu on Trainium ({source}): memory stats skipped "
                   "where the device is neuron")
        owner = self.parent(block)
        if isinstance(owner, cst.If) and owner.body is block and len(run) == len(block.body):
            self.replace(owner.test, lambda updated: _and(cast(cst.BaseExpression, updated), test), message)
            return True
        self.replace(line, wrapped_in_if(cst.parse_expression(test), run[1:]), message)
        for statement in run[1:]:
            self.remove_statement(statement, None)
        return True

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
                      and isinstance(test.comparisons[0].operator, cst.NotEqual)
                      and string_value(test.comparisons[0].comparator) == "neuron" and dotted(test.left) == f"{device}.type"):
                    return _PORTED  # the guard _skip_on_neuron writes
                elif (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                      and isinstance(test.comparisons[0].operator, cst.NotIn) and dotted(test.left) == f"{device}.type"
                      and isinstance(test.comparisons[0].comparator, cst.Tuple)
                      and {string_value(e.value) for e in test.comparisons[0].comparator.elements} >= {"cpu", "neuron"}):
                    return _PORTED
        return None

    # ------------------------------------------------------------------ torchtune compile_model / compile_loss
    def _compile_backend(self, node: cst.Call, source: str) -> None:
        if _BACKEND_ENV in self.context.module.code:
            return  # the file sets (or porter set) the backend variable: its choice, and a fixed point
        statement = next((a for a in self.ancestors(node) if isinstance(a, cst.SimpleStatementLine)), None)
        if statement is None or not isinstance(self.parent(statement), (cst.IndentedBlock, cst.Module)):
            self.mark(node, f"torchtune compiles with TORCH_COMPILE_BACKEND, default inductor ({source}): "
                      "set it to neuron on a Trainium host")
            return
        block = self.parent(statement)
        if any(seen is block for seen in self._backend_blocks):
            return  # an earlier statement of this block already set it: it runs first
        self._backend_blocks.append(cast(cst.CSTNode, block))
        torch, imports = torch_ref(self.context.module)
        recipe = self._recipe_device(statement)
        test = (f'{_RECIPE_DEVICE}.type == "neuron"' if recipe else
                f'{torch}.accelerator.is_available() and {torch}.accelerator.current_accelerator().type == "neuron"')
        new = cst.parse_statement(f'if {test}:\n    os.environ.setdefault("{_BACKEND_ENV}", "neuron")\n')
        self.insert_before(statement, [new], f"torchtune compiles with TORCH_COMPILE_BACKEND, default inductor ({source}): "
                           f"neuron {'where the recipe device is neuron' if recipe else 'on a Trainium host'}",
                           imports=(*imports, ImportSpec("os")))

    def _recipe_device(self, statement: cst.CSTNode) -> bool:
        """The statement is in a method (first parameter ``self``) of a class whose ``__init__``
        sets ``self._device`` to a device: ``torch.device(...)`` or torchtune's ``get_device(...)``
        (torchtune's recipes, ``recipes/full_finetune_single_device.py:120``)."""
        method = enclosing_function(self, statement)
        if method is None or not method.params.params or method.params.params[0].name.value != "self":
            return False
        body = self.parent(method)
        owner = self.parent(body) if body is not None else None
        if not isinstance(owner, cst.ClassDef):
            return False
        init = next((s for s in owner.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        if init is None:
            return False
        devices = ("torch.device", *DEVICE_GETTERS)

        def device_call(value: cst.BaseExpression) -> bool:
            if isinstance(value, cst.IfExp):  # the port's neuron:LOCAL_RANK choice (_device_getter)
                return device_call(value.body) and device_call(value.orelse)
            return isinstance(value, cst.Call) and self.matches(value.func, *devices)

        return any(
            isinstance(node, cst.Assign) and device_call(node.value)
            and any(dotted(t.target) == _RECIPE_DEVICE for t in node.targets)
            for node in child_index(self).walk(init))

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


def _cpu_wrapped(value: cst.BaseExpression) -> bool:
    """``"cpu" if str(x).startswith("neuron") else x``: a device the port already keeps off neuron."""
    if not (isinstance(value, cst.IfExp) and string_value(value.body) == "cpu" and isinstance(value.test, cst.Call)):
        return False
    func = value.test.func
    return (isinstance(func, cst.Attribute) and func.attr.value == "startswith" and len(value.test.args) == 1
            and string_value(value.test.args[0].value) == "neuron")


def _reads(rule: Rule, statement: cst.CSTNode, names: set[str]) -> bool:
    """``statement`` reads one of ``names`` (a bare name anywhere in it)."""
    return any(isinstance(inner, cst.Name) and inner.value in names for inner in child_index(rule).walk(statement))


def _and(test: cst.BaseExpression, extra: str) -> cst.BaseExpression:
    """``test and extra``, ``test`` parenthesised where ``and`` would bind into it."""
    if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)) and not test.lpar:
        if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And)):
            test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BooleanOperation(left=test, operator=cst.And(), right=cst.parse_expression(extra))


def _body(loop: cst.For) -> Sequence[cst.BaseStatement]:
    assert isinstance(loop.body, cst.IndentedBlock)
    return loop.body.body


def _moved(call: cst.CSTNode, device: cst.BaseExpression) -> cst.Call:
    """``next(it)`` → ``next(it).to(device)``."""
    assert isinstance(call, cst.Call)
    return cst.Call(func=cst.Attribute(value=call, attr=cst.Name("to")), args=[cst.Arg(device)])


def _suite_body(read: BatchRead) -> bool:
    """A loop whose body is on its own line (``for x in c: f(x)``): no statement to insert beside."""
    return isinstance(read.statement, cst.For) and not isinstance(read.statement.body, cst.IndentedBlock)


_PORTED = cst.Name("_ported_guard")  # _cpu_guard's answer for a guard that already skips neuron


@dataclass(frozen=True)
class _Carried:
    """A transform holding trained networks in a collector's env: its name (or its call's code),
    where it holds them, its call when a name bound once to it, and the env name it is reached through."""

    name: str
    source: str
    transform: cst.Call | None = None
    via: str | None = None


def _deepcopy_name(rule: Rule) -> tuple[str | None, tuple[ImportSpec, ...]]:
    """How the file spells ``copy.deepcopy``: its own top-level ``from copy import deepcopy [as n]``
    (that name bound nowhere else), else ``copy.deepcopy`` with ``import copy`` (added when missing)
    where the file binds ``copy`` only by ``import copy``; None otherwise (a parameter, a local or a
    top-level ``copy`` that is not the module)."""
    module = rule.context.module
    local = imported_as(module, "copy", "deepcopy")
    if local and len(name_binders(rule, local)) == 1:
        return local, ()
    binders = name_binders(rule, "copy")
    holders = [rule.parent(b) for b in binders]
    if any(not isinstance(h, cst.ImportAlias) or not isinstance(rule.parent(h), cst.Import) for h in holders):
        return None, ()
    return "copy.deepcopy", (() if binders else (ImportSpec("copy"),))


def _with_value(value: cst.BaseExpression) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """An edit that gives the (updated) argument ``value``."""
    return lambda arg: arg.with_changes(value=value)
