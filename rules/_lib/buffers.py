"""torchrl replay buffers shared between processes, as a script builds and reads them: which argument
sets the storage's device, and where the script samples them. No rule lives here (NRN116 uses it)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from porter.engine.rule import Rule
from porter.rules._lib.args import keyword, positional
from porter.rules._lib.imports import project_function
from porter.rules._lib.nodes import dotted
from porter.rules._lib.tree import child_index

# torchrl 0.14.1 replay buffers that take ``shared=`` (torchrl/data/replay_buffers/replay_buffers.py:
# "shared (bool, optional): whether the buffer will be shared using multiprocessing or not").
REPLAY_BUFFERS = frozenset({
    "torchrl.data.ReplayBuffer",
    "torchrl.data.TensorDictReplayBuffer",
    "torchrl.data.PrioritizedReplayBuffer",
    "torchrl.data.TensorDictPrioritizedReplayBuffer",
    "torchrl.data.replay_buffers.ReplayBuffer",
    "torchrl.data.replay_buffers.TensorDictReplayBuffer",
    "torchrl.data.replay_buffers.PrioritizedReplayBuffer",
    "torchrl.data.replay_buffers.TensorDictPrioritizedReplayBuffer",
})
_STORAGE_SUFFIX = "Storage"  # LazyTensorStorage, LazyMemmapStorage, TensorStorage (a callee's spelling)
_BUFFER_SUFFIX = "ReplayBuffer"


@dataclass(frozen=True)
class Samples:
    """Where a function samples the buffer: ``x = buffer.sample(...)`` lines (``x`` and the line), and
    whether every use of the buffer there is one of these, a binding, an attribute read or call
    (``buffer.extend(...)``, ``buffer.write_count``) or a ``replay_buffer=`` argument of a collector."""

    lines: tuple[tuple[str, cst.SimpleStatementLine], ...]
    complete: bool


def shared(call: cst.Call) -> bool:
    """The call is given ``shared=True``."""
    arg = keyword(call, "shared")
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "True"


def storage_device(rule: Rule, call: cst.Call) -> cst.Arg | None:
    """The argument that sets the device of the storage of the replay buffer ``call`` builds with
    ``shared=True``: a torchrl buffer's ``storage=XStorage(..., device=d)``; or, for a function of this
    file or of a project module (``make_replay_buffer(..., device=device, shared=True)``), the argument
    given to its parameter ``P`` where its body passes ``device=P`` to a call spelled ``...Storage``
    (or ``partial(...Storage, device=P)``) and its own ``shared`` parameter as ``shared=`` to a call
    spelled ``...ReplayBuffer``. None when neither holds."""
    if any(name in REPLAY_BUFFERS for name in rule.qualified(call.func)):
        storage = keyword(call, "storage")
        if storage is not None and isinstance(storage.value, cst.Call) and _spelled(storage.value.func, _STORAGE_SUFFIX):
            return keyword(storage.value, "device")
        return None
    found = project_function(rule, call.func)
    if found is None:
        return None
    _, function = found
    params = [param.name.value for param in function.params.params]
    names = params + [param.name.value for param in function.params.kwonly_params]
    if "shared" not in names:
        return None
    forwards_shared = False
    device_param: str | None = None
    for node in child_index(rule).walk(function):
        if not isinstance(node, cst.Call):
            continue
        flag = keyword(node, "shared")
        if (_spelled(node.func, _BUFFER_SUFFIX) and flag is not None and isinstance(flag.value, cst.Name)
                and flag.value.value == "shared"):
            forwards_shared = True
        makes_storage = _spelled(node.func, _STORAGE_SUFFIX) or (
            (dotted(node.func) or "").endswith("partial") and bool(node.args) and _spelled(node.args[0].value, _STORAGE_SUFFIX))
        device = keyword(node, "device") if makes_storage else None
        if device is not None and isinstance(device.value, cst.Name) and device.value.value in names:
            device_param = device.value.value
    if not forwards_shared or device_param is None:
        return None
    given = keyword(call, device_param)
    if given is None and device_param in params:
        given = positional(call, params.index(device_param))
    return given


def _spelled(func: cst.BaseExpression, suffix: str) -> bool:
    text = dotted(func)
    return text is not None and text.rpartition(".")[2].endswith(suffix)


def samples(rule: Rule, scope: cst.CSTNode, buffer: str) -> Samples:
    """Where ``scope`` samples the buffer named ``buffer`` (see ``Samples``)."""
    lines: list[tuple[str, cst.SimpleStatementLine]] = []
    complete = True
    for node in child_index(rule).walk(scope):
        if not (isinstance(node, cst.Name) and node.value == buffer):
            continue
        parent = rule.parent(node)
        if ((isinstance(parent, cst.Attribute) and parent.attr is node) or (isinstance(parent, cst.Arg) and parent.keyword is node)
                or isinstance(parent, cst.Param)):
            continue  # another name spelled the same: cfg.replay_buffer, f(replay_buffer=...), a parameter
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Attribute) and parent.value is node
                                                    and parent.attr.value != "sample"):
            continue
        if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "replay_buffer":
            holder = rule.parent(parent)
            if isinstance(holder, cst.Call) and "collector" in (dotted(holder.func) or "").lower():
                continue  # a collector fills the buffer; it does not sample it
        if isinstance(parent, cst.Attribute) and parent.value is node:  # buffer.sample
            read = _sample_line(rule, parent)
            if read is not None:
                lines.append(read)
                continue
        complete = False
    return Samples(tuple(lines), complete)


def _sample_line(rule: Rule, attribute: cst.Attribute) -> tuple[str, cst.SimpleStatementLine] | None:
    """``x = buffer.sample(...)`` as a line of a block of its own: (``x``, the line)."""
    call = rule.parent(attribute)
    assign = rule.parent(call) if isinstance(call, cst.Call) and call.func is attribute else None
    line = rule.parent(assign) if isinstance(assign, cst.Assign) and assign.value is call else None
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
            and isinstance(rule.parent(line), (cst.IndentedBlock, cst.Module))):
        return None
    assert isinstance(assign, cst.Assign)
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign.targets[0].target.value, line
