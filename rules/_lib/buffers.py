"""torchrl replay buffers shared between processes, as a script builds and reads them: which argument
sets the storage's device, and where the script samples them. No rule lives here (NRN116 uses it)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from porter.engine.rule import Rule
from porter.rules._lib.args import keyword, positional
from porter.rules._lib.imports import project_function
from porter.rules._lib.nodes import dotted, string_value
from porter.rules._lib.tree import child_index, name_bindings, visit_original

# torchrl 0.14.1 replay buffers that take ``shared=`` (torchrl/data/replay_buffers/replay_buffers.py:
# "shared (bool, optional): whether the buffer will be shared using multiprocessing or not"). The
# TensorDict ones sample a TensorDict (``.to(device)`` moves it); the others sample what they store.
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
_TENSORDICT_PREFIX = "TensorDict"


@dataclass(frozen=True)
class StorageDevice:
    """The argument that sets a shared buffer's storage device (None: the callee's default, which
    may be the accelerator) and whether the buffer samples TensorDicts."""

    arg: cst.Arg | None
    tensordicts: bool


@dataclass(frozen=True)
class Samples:
    """Where a function samples the buffer: ``x = buffer.sample(...)`` lines not already followed by
    ``x = x.to(...)`` (``x`` and the line), and whether every use of the buffer there is one of these,
    a ``buffer.sample(...).to(...)``, a binding, an attribute read or call (``buffer.extend(...)``,
    ``buffer.write_count``) or a ``replay_buffer=`` argument of a collector."""

    lines: tuple[tuple[str, cst.SimpleStatementLine], ...]
    complete: bool


def shared(call: cst.Call) -> bool:
    """The call is given ``shared=True``."""
    arg = keyword(call, "shared")
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "True"


def storage_device(rule: Rule, call: cst.Call) -> StorageDevice | None:
    """Where the storage device of the replay buffer ``call`` builds with ``shared=True`` is set:
    a torchrl buffer's ``storage=XStorage(..., device=d)`` (or ``storage=s``, ``s = XStorage(...)`` its
    only binding); or, for a function of this file or of a project module
    (``make_replay_buffer(..., device=device, shared=True)``), the argument given to its parameter
    ``P`` where its body passes ``device=P`` to a call spelled ``...Storage`` (or ``partial(...Storage,
    device=P)``), its own ``shared`` parameter as ``shared=`` to a call spelled ``...ReplayBuffer``, and
    never rebinds ``P``. None where neither holds, or the storage is on its default device (the CPU)."""
    if any(name in REPLAY_BUFFERS for name in rule.qualified(call.func)):
        storage = keyword(call, "storage")
        made = storage.value if storage is not None else None
        if isinstance(made, cst.Name):
            values = name_bindings(rule, made)
            made = values[0] if values and len(values) == 1 and isinstance(values[0], cst.Call) else None
        if not (isinstance(made, cst.Call) and _spelled(made.func, _STORAGE_SUFFIX)):
            return None
        device = keyword(made, "device")
        tensordicts = any(_TENSORDICT_PREFIX in name for name in rule.qualified(call.func))
        return StorageDevice(device, tensordicts) if device is not None else None
    found = project_function(rule, call.func)
    if found is None:
        return None
    _, function = found
    params = [param.name.value for param in function.params.params]
    every = [*function.params.params, *function.params.kwonly_params]
    names = [param.name.value for param in every]
    if "shared" not in names:
        return None
    buffers: list[str] = []
    device_param: str | None = None
    assigned: set[str] = set()
    for node in child_index(rule).walk(function):
        target = _bound(node)
        if target is not None:
            assigned.update(n.value for n in child_index(rule).walk(target) if isinstance(n, cst.Name))
        if not isinstance(node, cst.Call):
            continue
        flag = keyword(node, "shared")
        if (_spelled(node.func, _BUFFER_SUFFIX) and flag is not None and isinstance(flag.value, cst.Name)
                and flag.value.value == "shared"):
            buffers.append((dotted(node.func) or "").rpartition(".")[2])
        makes_storage = _spelled(node.func, _STORAGE_SUFFIX) or (
            (dotted(node.func) or "").endswith("partial") and bool(node.args) and _spelled(node.args[0].value, _STORAGE_SUFFIX))
        device = keyword(node, "device") if makes_storage else None
        if device is not None and isinstance(device.value, cst.Name) and device.value.value in names:
            device_param = device.value.value
    if not buffers or device_param is None or device_param in assigned:
        return None
    tensordicts = all(name.startswith(_TENSORDICT_PREFIX) for name in buffers)
    given = keyword(call, device_param)
    if given is None and device_param in params:
        given = positional(call, params.index(device_param))
    if given is not None:
        return StorageDevice(given, tensordicts)
    default = next(param.default for param in every if param.name.value == device_param)
    text = string_value(default) if default is not None else None
    # the helper's own default: the CPU unless it names an accelerator
    return StorageDevice(None, tensordicts) if text is not None and not text.startswith("cpu") and text != "auto" else None


def _bound(node: cst.CSTNode) -> cst.BaseExpression | None:
    """What a binding statement or clause binds (an assignment's, a loop's, a ``with ... as``'s target)."""
    if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
        return node.target
    if isinstance(node, cst.WithItem) and node.asname is not None:
        return node.asname.name
    return None


def _spelled(func: cst.BaseExpression, suffix: str) -> bool:
    text = dotted(func)
    return text is not None and text.rpartition(".")[2].endswith(suffix)


class _Uses(cst.CSTVisitor):
    """The buffer's uses in one scope, nested functions, lambdas and classes left out (a use there
    makes the answer incomplete)."""

    def __init__(self, rule: Rule, scope: cst.CSTNode, buffer: str) -> None:
        self.rule, self.scope, self.buffer = rule, scope, buffer
        self.names: list[cst.Name] = []
        self.nested_use = False

    def _nested(self, node: cst.CSTNode) -> bool:
        if node is self.scope:
            return True
        if any(isinstance(n, cst.Name) and n.value == self.buffer for n in child_index(self.rule).walk(node)):
            self.nested_use = True
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self._nested(node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self._nested(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self._nested(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.buffer:
            self.names.append(node)


def samples(rule: Rule, scope: cst.CSTNode, buffer: str) -> Samples:
    """Where ``scope`` samples the buffer named ``buffer`` (see ``Samples``)."""
    uses = _Uses(rule, scope, buffer)
    visit_original(child_index(rule), scope, uses)
    lines: list[tuple[str, cst.SimpleStatementLine]] = []
    complete = not uses.nested_use
    for node in uses.names:
        parent = rule.parent(node)
        if ((isinstance(parent, cst.Attribute) and parent.attr is node) or (isinstance(parent, cst.Arg) and parent.keyword is node)
                or isinstance(parent, (cst.Param, cst.AssignTarget))):
            continue  # another name spelled the same (cfg.replay_buffer, f(replay_buffer=...)), or a binding
        if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "replay_buffer":
            holder = rule.parent(parent)
            if isinstance(holder, cst.Call) and "collector" in (dotted(holder.func) or "").lower():
                continue  # a collector fills the buffer; it does not sample it
        if isinstance(parent, cst.Attribute) and parent.value is node:
            read = _sample(rule, parent) if parent.attr.value == "sample" else _MOVED  # buffer.extend(...), .write_count
            if isinstance(read, tuple):
                lines.append(read)
            if read is not None:
                continue
        complete = False
    return Samples(tuple(lines), complete)


_MOVED = "moved"  # a read that needs no move: already moved, or not a sample


def _sample(rule: Rule, attribute: cst.Attribute) -> tuple[str, cst.SimpleStatementLine] | str | None:
    """``x = buffer.sample(...)`` as a line of a block of its own: (``x``, the line); ``_MOVED`` for
    ``buffer.sample(...).to(...)`` and where the next line is ``x = x.to(...)``; None otherwise (a
    ``return_info=`` sample is a tuple, not a batch)."""
    call = rule.parent(attribute)
    if not (isinstance(call, cst.Call) and call.func is attribute) or keyword(call, "return_info") is not None:
        return None
    after = rule.parent(call)
    if isinstance(after, cst.Attribute) and after.value is call and after.attr.value == "to":
        return _MOVED
    line = rule.parent(after) if isinstance(after, cst.Assign) and after.value is call else None
    block = rule.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(block, (cst.IndentedBlock, cst.Module))):
        return None
    assert isinstance(after, cst.Assign)
    if len(after.targets) != 1 or not isinstance(after.targets[0].target, cst.Name):
        return None
    batch = after.targets[0].target.value
    body = list(block.body)
    following = body[body.index(line) + 1] if body.index(line) + 1 < len(body) else None
    if isinstance(following, cst.SimpleStatementLine) and _moves(following, batch):
        return _MOVED
    return batch, line


def _moves(line: cst.SimpleStatementLine, batch: str) -> bool:
    """``batch = batch.to(...)``."""
    statement = line.body[0] if len(line.body) == 1 else None
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
        return False
    target, value = statement.targets[0].target, statement.value
    return (isinstance(target, cst.Name) and target.value == batch and isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to"
            and isinstance(value.func.value, cst.Name) and value.func.value.value == batch)
