"""NRN6xx: host synchronisations on the per-step path of training and evaluation loops.

Three rules share one step-loop analysis (``rules/_lib/hostsync/``): accumulations kept on the
device (NRN601/NRN605), per-step logging and ``synchronize()`` moved under a logging interval
(NRN603/NRN604/NRN607), and review markers for syncs that feed control flow or remain (NRN602/NRN606).

Marker wording (``porter check`` reads it): a marker whose text, after ``# porter: NRN6xx``, starts
with ``deliberate:`` sits above a sync kept on purpose — the body of a logging/timing interval
branch this port created (NRN603/NRN604), or a sync that decides control flow (NRN602). Every
other NRN6xx marker names a sync left for a person to remove.
"""

from __future__ import annotations

import re
from typing import ClassVar

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.fastcst.walk import TreeIndex
from porter.engine.rule import MARKER_PREFIX, Rule
from porter.rules._lib.hostsync import (
    ACCUMULATE,
    APPEND,
    CONSTANT,
    CONTROL,
    LOG,
    RESIDUAL,
    SYNCHRONIZE,
    Feeder,
    HostSyncAnalysis,
    Refresh,
    Site,
    StepLoop,
    has_comparison,
    strip_host,
)
from porter.rules._lib.hostsync.meters import PENDING, READ, MeterPlan
from porter.rules._lib.hostsync.unlogged import Unlogged
from porter.rules._lib.nodes import dotted

# A file can only have a step loop if one of these words appears.
_TRIGGERS = ("backward", ".step(", "zero_grad", "no_grad", "inference_mode", "eval", "valid")
# A step loop calls .backward()/.zero_grad()/.step() (itself or through a function of the file
# that does), or iterates over a loader-like name (LOADER_NAME in _lib/hostsync/model.py).
# Spelled out, not (?i:loader|\bdl\b|_dl\b): case-insensitive alternatives cost 2x here ([dD][lL]\b is wider, still necessary).
_TRIGGER_PATTERN = r"\.(?:[\s\\]|#[^\r\n]*[\r\n])*(?:backward|zero_grad|step)\b|[lL][oO][aA][dD][eE][rR]|[dD][lL]\b"
_ORDER = 60


def _describe(node: cst.CSTNode, module: cst.Module) -> str:
    text = module.code_for_node(node).strip()
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


# ----------------------------------------------------------------------------- device forms


def _device_value(index: TreeIndex):
    """The on-device form of a host-synchronising read: ``loss.item()`` -> ``loss.detach().float()``."""

    def transform(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.BaseExpression)
        base = strip_host(updated)
        if has_comparison(index, base):  # a count or accuracy: no gradient to detach
            return base.with_changes(lpar=(), rpar=()) if isinstance(base, cst.Call) else base
        if isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) and base.func.attr.value == "detach":
            return cst.Call(func=cst.Attribute(value=base, attr=cst.Name("float")))
        detached = cst.Call(func=cst.Attribute(value=base, attr=cst.Name("detach")))
        return cst.Call(func=cst.Attribute(value=detached, attr=cst.Name("float")))

    return transform


def _detached(updated: cst.CSTNode) -> cst.CSTNode:
    """``out.mean().item()`` -> ``out.mean().detach()``: the value stays a tensor until it is logged."""
    assert isinstance(updated, cst.Call) and isinstance(updated.func, cst.Attribute)
    return updated.with_changes(func=updated.func.with_changes(attr=cst.Name("detach")))


def _unread(updated: cst.CSTNode) -> cst.CSTNode:
    """``acc1.item()`` -> ``acc1``."""
    assert isinstance(updated, cst.Call) and isinstance(updated.func, cst.Attribute)
    return updated.func.value


def _read_item(updated: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(updated, cst.BaseExpression)
    return cst.Call(func=cst.Attribute(value=updated, attr=cst.Name("item")))


def _mean_read(count: str):
    """A read of a running sum in the moved log: ``(float(train_loss) / train_loss_steps)``."""

    def transform(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.BaseExpression)
        value = updated
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "float"):
            value = cst.Call(func=cst.Name("float"), args=[cst.Arg(value=updated.with_changes(lpar=(), rpar=()))])
        return cst.BinaryOperation(
            left=value,
            operator=cst.Divide(),
            right=cst.Name(count),
            lpar=[cst.LeftParen()],
            rpar=[cst.RightParen()],
        )

    return transform


def _wrapped(kind: str):
    def transform(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.BaseExpression)
        return cst.Call(func=cst.Name(kind), args=[cst.Arg(value=updated.with_changes(lpar=(), rpar=()))])

    return transform


def _under_interval(
    test: str,
    marker: str,
    created: set[int],
    extra: tuple[cst.BaseStatement, ...] = (),
    carried: list[cst.BaseStatement] | None = None,
):
    """Wrap a statement (``carried`` before it, ``extra`` after it) in ``if <test>:`` under a
    ``deliberate:`` marker; the statement's own comment lines move onto the ``if``."""
    condition = cst.parse_expression(test)

    def transform(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.SimpleStatementLine)
        first = [s.with_changes(leading_lines=()) for s in carried or ()]
        wrapped = cst.If(
            test=condition,
            body=cst.IndentedBlock(body=[*first, updated.with_changes(leading_lines=()), *extra]),
            leading_lines=[*updated.leading_lines, cst.EmptyLine(indent=True, comment=cst.Comment(marker))],
        )
        created.add(id(wrapped))
        return wrapped

    return transform


def _logger_only_dict(test: str, marker: list[cst.EmptyLine]):
    """``M = {...}`` -> ``M = {...} if <test> else {}`` (under ``marker``)."""
    condition = cst.parse_expression(test)

    def transform(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.SimpleStatementLine) and isinstance(updated.body[0], cst.Assign)
        assign = updated.body[0]
        choice = cst.IfExp(test=condition, body=assign.value, orelse=cst.Dict([]))
        return updated.with_changes(body=[assign.with_changes(value=choice)], leading_lines=[*updated.leading_lines, *marker])

    return transform


def _under_logger(test: str, marker: list[cst.EmptyLine], created: set[int]):
    """A statement -> ``if <test>:`` holding it, ``marker`` above the ``if``; the statement's own
    comment lines go above the ``if`` too, but ``# porter:`` lines (another rule's marker, a user's
    ``ignore[...]``) stay on the statement they are about (a second pass finds them there)."""
    condition = cst.parse_expression(test)

    def transform(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.SimpleStatementLine)
        lines = list(updated.leading_lines)
        first = next((i for i, line in enumerate(lines) if line.comment is not None
                      and line.comment.value.startswith(MARKER_PREFIX)), len(lines))
        inner = updated.with_changes(leading_lines=[line.with_changes(indent=True) for line in lines[first:]])
        branch = cst.If(test=condition, body=cst.IndentedBlock(body=[inner]), leading_lines=[*lines[:first], *marker])
        created.add(id(branch))
        return branch

    return transform


def _taken_into(carried: list[cst.BaseStatement]):
    """Remove a statement from its place and hand its updated form to the ``if`` built after it
    (edits apply in source order, so the ``if`` of the next statement sees it)."""

    def transform(updated: cst.CSTNode) -> cst.RemovalSentinel:
        assert isinstance(updated, cst.SimpleStatementLine)
        carried.append(updated)
        return cst.RemoveFromParent()

    return transform


_OWN_MARKER = re.compile(r"#\s*porter:\s*NRN\d{3}\b")


def _is_marker(line: cst.EmptyLine) -> bool:
    """A marker a porter rule wrote (``# porter: NRN603 ...``), not a user's ``# porter: ignore[...]``."""
    return line.comment is not None and bool(_OWN_MARKER.match(line.comment.value))


def _tally(blocks: dict[int, tuple[cst.CSTNode, int]], block: cst.CSTNode) -> None:
    """Count one more statement this rule wraps in ``block`` (a block with two gets ``_merge_adjacent``)."""
    blocks[id(block)] = (block, blocks.get(id(block), (block, 0))[1] + 1)


def _merge_adjacent(created: set[int], *, into_any_branch: bool = False):
    """Merge an ``if`` this rule created into the ``if`` right before it when their tests are the same
    text: one this rule created too (one marker per reason: the second's kept above the first's unless
    it says the same), or, ``into_any_branch``,
    any ``if`` with no ``else`` (NRN611: its read joins the end of the branch, its marker with it)."""

    def transform(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.IndentedBlock)
        merged: list[cst.BaseStatement] = []
        code = cst.Module([]).code_for_node
        for statement in updated.body:
            previous = merged[-1] if merged else None
            if (
                isinstance(statement, cst.If)
                and isinstance(previous, cst.If)
                and id(statement) in created
                and (previous.orelse is None if into_any_branch else id(previous) in created)
                and code(statement.test).strip() == code(previous.test).strip()
                and isinstance(previous.body, cst.IndentedBlock)
                and isinstance(statement.body, cst.IndentedBlock)
            ):
                inner = list(statement.body.body)
                own = [line for line in statement.leading_lines if into_any_branch or not _is_marker(line)]
                inner[0] = inner[0].with_changes(leading_lines=[*own, *getattr(inner[0], "leading_lines", ())])
                # a marker the merged ``if`` does not carry yet (another dict's reason, NRN612) joins its own
                shown = {line.comment.value for line in previous.leading_lines if line.comment is not None}
                more = [line for line in statement.leading_lines if not into_any_branch and _is_marker(line)
                        and line.comment is not None and line.comment.value not in shown]
                joined = previous.with_changes(leading_lines=[*previous.leading_lines, *more],
                                               body=previous.body.with_changes(body=[*previous.body.body, *inner]))
                created.add(id(joined))
                merged[-1] = joined
                continue
            merged.append(statement)
        return updated.with_changes(body=merged)

    return transform


def _read_after_branch(plan: Refresh, test: str, marker: str, created: set[int]):
    """``target = <value>`` -> ``if <test>: name = <value>`` (marker above) then ``target = name``;
    ``name = <value>`` moves whole into the ``if``."""
    condition = cst.parse_expression(test)

    def transform(updated: cst.CSTNode) -> cst.CSTNode | cst.FlattenSentinel:
        assert isinstance(updated, cst.SimpleStatementLine) and isinstance(updated.body[0], cst.Assign)
        assign = updated.body[0]
        if plan.moves_whole:  # the statement itself, its end-of-line comment with it
            read = updated.with_changes(leading_lines=())
        else:
            read = cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(plan.name))], value=assign.value)])
        # a statement that moves takes its comments with it; one that stays keeps its own lines
        own = [line for line in updated.leading_lines if line.comment is not None] if plan.moves_whole else []
        branch = cst.If(
            test=condition,
            body=cst.IndentedBlock(body=[read]),
            leading_lines=[*own, cst.EmptyLine(indent=True, comment=cst.Comment(marker))],
        )
        created.add(id(branch))
        if plan.moves_whole:
            return branch
        rest = updated.with_changes(body=[assign.with_changes(value=cst.Name(plan.name))])
        return cst.FlattenSentinel([branch, rest])

    return transform


class HostSyncAccumulate(Rule):
    """Keep per-step accumulations of losses and counts on the device.

    What it does:
        In a step loop (a loop that calls ``.backward()``, ``.zero_grad()`` or an optimizer's
        ``.step()``, directly or through a function of the same file) or an evaluation loop over
        a loader, ``running += loss.item()`` becomes ``running += loss.detach().float()`` and
        ``correct += (pred == y).sum().item()`` (or ``.cpu().numpy()``) becomes
        ``correct += (pred == y).sum()``: the accumulator is a device tensor. Every place the
        accumulator is read (the print after the loop, the logging branch, the ``return``) gets one
        conversion, ``float(running)`` / ``int(correct)``. The conversion follows what is
        accumulated, not the first literal: ``total = 0`` then ``total += loss.item()`` is a float
        sum, read as ``float(total)``; ``int(...)`` only for a sum of boolean counts
        (``(pred == y).sum()``, ``torch.sum(a == b)``) into an integer-initialised name. ``losses.append(loss.item())`` appends
        ``loss.detach().float()`` when the list is only consumed through ``sum()``, ``len()`` or
        indexing, which are converted with ``float(...)``; otherwise (``np.mean(losses)``,
        ``json.dump``, the list returned or passed on) it gets an NRN605 marker, as do
        accumulators that are read every step, attributes (``self.total``), globals.

    Why:
        ``.item()`` copies the value to the host and waits for every queued device operation
        (TorchNeuron implements it as ``self.cpu().item()``): one full host sync per step, which
        stalls the asynchronous device queue. Summing on the device costs nothing; the single
        conversion happens where the value is shown.

    Before:
        for images, targets in loader:
            ...
            running_loss += loss.item()
            correct += (outputs.argmax(1) == targets).sum().item()
        print(f"loss {running_loss / len(loader):.4f} acc {correct / total:.2f}")

    After:
        for images, targets in loader:
            ...
            running_loss += loss.detach().float()
            correct += (outputs.argmax(1) == targets).sum()
        print(f"loss {float(running_loss) / len(loader):.4f} acc {int(correct) / total:.2f}")

    Safety:
        Safe: values are the same up to float32 summation (the loss is accumulated as a float32
        tensor instead of a Python float). Step loops are found by the heuristic above; a step
        done through an object's ``__call__`` with no ``zero_grad()`` in the loop, or a loop in a
        function reached only through another module, is missed. Reads are found by name in the
        enclosing function; an accumulator whose reads cannot all be converted is left as it is
        with an NRN605 marker. ``float(x)``/``int(x)`` work for both the initial Python number and
        the tensor, so a loop that never runs still works. A count is recognised by its shape
        (a ``sum``/``count_nonzero`` of a comparison, ``eq``/``ne``..., ``torch.sum`` by qualified
        name); any other accumulated value is read back as a float, so a sum is never truncated.
    """

    code: ClassVar[str] = "NRN601"
    name: ClassVar[str] = "host-sync-accumulate"
    summary: ClassVar[str] = "step-loop accumulations of loss.item()/.sum().item() kept on the device; one conversion where read"
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = _TRIGGERS
    trigger_pattern: ClassVar[str] = _TRIGGER_PATTERN
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN605": "per-step .item() accumulated on the host where it cannot be kept on the device: review marker",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = _ORDER

    def visit_Module(self, node: cst.Module) -> None:
        analysis = self.analysis(HostSyncAnalysis)
        marked: set[int] = set()  # one marker per statement
        for site in analysis.of_kind(ACCUMULATE, APPEND):
            if site.note:
                if id(site.statement) not in marked:
                    marked.add(id(site.statement))
                    self._mark(site)
            else:
                self._convert(site, analysis.index)

    def _convert(self, site: Site, index: TreeIndex) -> None:
        module = self.context.module
        for sync in site.syncs:
            shown = _describe(sync, module)
            self.replace(sync, _device_value(index), f"{shown} accumulated on the device (no host sync {site.loop.per})", drops_calls=True)
        for node, kind in site.wraps:
            self.replace(node, _wrapped(kind), None)

    def _mark(self, site: Site) -> None:
        shown = _describe(site.syncs[0], self.context.module) if site.syncs else "value"
        every = site.loop.every
        if site.kind == APPEND:
            message = f"{shown} appended {every} ({site.note}): append .detach() and convert once where read"
        else:
            message = f"{shown} accumulated on the host {every} ({site.note}): accumulate .detach() on the device"
        self.mark(site.node, message, code="NRN605")


class HostSyncLogging(Rule):
    """Move per-step logging of device values under a logging interval.

    What it does:
        In a step loop, a logging statement that reads a device value every step —
        ``print(f"... {loss.item():.4f}")``, ``pbar.set_postfix(loss=loss.item())``,
        ``tqdm.write``, ``writer.add_scalar(..., loss.item(), step)``, ``logger.info``/``wandb.log``,
        a tensor formatted with an f-string or ``%``, ``float(loss)``, or an accumulator the NRN601
        rule keeps on the device — is wrapped in ``if <step> % <interval> == 0:`` under a
        ``# porter: NRN603 deliberate: ...`` marker. The interval is the one the loop already
        uses for logging (``if iter_num % log_interval == 0``; a branch that saves or evaluates is
        another cadence and never reused), else a name spelled like one in the function or module
        (``log_interval``, ``print_freq``, ``log_every``, ``args.log_interval``...), else a new
        module constant ``LOG_INTERVAL = 10`` (set with ``--log-interval``). The step is the
        counter of an existing ``%`` branch, else the loop's ``enumerate`` index, else a counter the
        loop increments by one; a ``for`` loop with none gets ``enumerate()`` added (``step``).
        What the log prints moves with it, so the syncs stop too: a value assigned every step as
        ``d_x = out.mean().item()`` and read only by moved logs becomes ``out.mean().detach()``,
        read as ``d_x.item()`` in the log; an assignment right before the log and read only by it
        (``logs = {"loss": loss.item()}`` then ``pbar.set_postfix(**logs)``) moves into the
        branch. A device accumulator logged and then reset (``log(train_loss); train_loss = 0.0``)
        is logged as its mean over the interval: the reset moves into the branch and a step count
        (``train_loss_steps``) divides the sum. A log whose values keep syncing every step anyway
        stays where it is (NRN606 marker, by the control-flow rule). A log in a function the loop
        calls every step (``train(epoch)`` nested in ``main()``, or a module function) moves there
        when the loop passes its counter in: ``if epoch % LOG_INTERVAL == 0:`` on the parameter.
        A branch that picks a process (``if rank == 0:``, ``dist.get_rank() == 0``) runs every step
        on that process: its logs move too. An accumulator already on the device
        (``running += loss.detach().float()``, the form NRN601 writes) is logged as a running mean
        like one NRN601 converts in the same pass, so one rule at a time gives the same port.
        ``torch.cuda.synchronize()``/``torch.neuron.synchronize()`` run every step (for timing) move
        under the same interval (NRN604), unless an ``if`` in the loop that names profiling or timing
        (``if profiling:``, ``if args.timing:``) guards them: the user chose that sync for honest
        timers. A ``while`` loop with no counter gets an NRN607 marker.
        A DeiT/timm-style metric logger (``MetricLogger.update(**kwargs)`` doing ``v.item()`` into
        ``SmoothedValue`` meters, shape in ``rules/_lib/hostsync/meters.py``) keeps the tensors
        instead (NRN608): the meter's ``update`` stores a detached copy, and every other method of
        the meter (``median``, ``global_avg``, ``__str__``, ``synchronize_between_processes``) first
        reads the stored tensors back, in order, through the meter's own ``update``; the loops'
        ``logger.update(loss=loss.item())`` / ``logger.meters["acc1"].update(acc1.item(), n=b)``
        pass the tensor. The logger prints when it did, the same numbers.
        A per-step read of a value that only an interval branch right before it refreshes
        (``if i % log_interval == 0: eval_td = env.rollout(...)`` then, every step,
        ``metrics["eval/reward"] = eval_td["next", "reward"].sum(1).mean().item()``) is read once,
        at the end of that branch, into a name of its own (``eval_reward``) that the per-step
        statement reads (NRN611): the same value at every step, one sync per interval. Heuristic
        (``rules/_lib/hostsync/refreshed.py``): the value only reads (subscripts, arithmetic,
        ``.item()``-like readers); the names it reads that the branch assigns appear nowhere else
        in the loop (in the branch only as assignment targets), and its other names appear nowhere
        else in the loop and are not assigned in it; the branch has no ``else`` and its test calls
        nothing and reads nothing the branch assigns.
        A dict of metrics that a step loop (or the loop of collected batches around it) fills from
        the device every step and that only a logger reads — ``log_metrics(logger, metrics, i)``
        with a helper whose whole body is ``if logger is not None:``, ``save(path, metrics=...)``
        with a helper that starts with ``if path in (None, ""): return None``, or any call under
        ``if logger:`` / ``if ckpt and ...:`` — is filled from the device only when there is a logger
        (NRN612): ``metrics = {...} if logger is not None else {}``, ``if logger is not None:
        metrics.update({...})``. Heuristic (``rules/_lib/hostsync/unlogged.py``): the dict is bound
        once in the loop, as a dict literal (outside it only by plain ``metrics = ...``), and its
        every later use in the iteration is a write (``.update(...)``, ``[key] = ...``) or an
        argument of such a consumer, as is every use after the loop (the final save of the last
        metrics); the guarded statements
        only read (``.cpu()``, ``.item()``, arithmetic); the logger's name is bound nowhere in the loop.
        The helper is read in this file or in a project module the file imports. A value such a
        statement shares with a log that moves (``loss_val = loss.item()`` also shown by
        ``pbar.set_postfix``) stays on the device and is read there with ``.item()``.

    Why:
        Reading a device value as text is a host sync (``.item()`` copies to the host and waits
        for the device queue). Once per step it serialises the host with the device; every N
        steps it costs nothing measurable. ``synchronize()`` every step does the same for timing
        that is only printed every N steps.

    Before:
        for step, (x, y) in enumerate(loader):
            ...
            print(f"step {step} loss {loss.item():.4f}")

    After:
        LOG_INTERVAL = 10  # steps between logged (host-synchronising) values
        ...
        for step, (x, y) in enumerate(loader):
            ...
            # porter: NRN603 deliberate: host sync every LOG_INTERVAL steps (logging interval; was every step)
            if step % LOG_INTERVAL == 0:
                print(f"step {step} loss {loss.item():.4f}")

        NRN612, metrics only a logger reads (``log_metrics`` in utils.py does nothing without one):
            # porter: NRN612 metrics is read only by log_metrics(...), which does nothing when logger is None: ...
            metrics = {"loss": loss.cpu(), **loss_vals.cpu()} if logger is not None else {}
            ...
            log_metrics(logger, metrics, i)

        NRN611, a value refreshed only by the interval branch before it:
            if i % log_interval == 0:
                eval_td = test_env.rollout(...)
                # porter: NRN611 deliberate: read where eval_td is refreshed (logging interval), ...
                eval_reward = eval_td["next", "reward"].sum(1).mean().item()
            metrics["eval/reward"] = eval_reward

        A metric logger's meter (NRN608), ``def update(self, value, n=1):`` then gets
            if isinstance(value, torch.Tensor):  # read when the meter is read, not every step
                self._pending.append((value.detach().clone(), n))
                return
            self._read_pending()

    Safety:
        Review: output frequency changes (one line per interval instead of per step; a
        progress-bar postfix updates every N steps; a running value is logged as its mean over
        the interval), and the marker in the source says so. NRN608 changes no output: the values
        and the lines printed are the same (read back through the meter's own ``update``, in order;
        ``.clone()`` keeps a tensor changed in place later); what moves is when ``.item()`` runs, so
        an error it raises (a tensor of several elements) comes where the meter is read, and the
        tensors of one printing interval stay allocated until then. A meter read from outside
        its class (``meter.total``) or a logger given meters of another class is left (NRN606).
        NRN611 changes no output either: each step logs the value it logged before, read once per
        interval; it is a review change because an object the loop's names do not show (a buffer
        another call fills in place) could change that value between intervals.
        NRN612 changes no output with a logger (the same values, read as often as before, so it
        still syncs every step: choose a logging interval) and logs nothing without one, as before;
        it is a review change because the consumer is recognised by its shape (a helper of another
        module is read as the runner listed it), and what a guarded statement would have raised
        without a logger (``.item()`` of several elements, a division by zero, a missing key) no
        longer happens; a read not spelled with the dict's name (``locals()["metrics"]``) is not seen.
        Statements already under an ``if``
        that uses ``%`` or ``==`` against a non-string, or in a branch that ends in
        ``break``/``return``/``raise``/``sys.exit``, are left. A moved assignment must only read
        (its calls are ``.item()``/``.detach()``/``get_last_lr()``-like readers); a kept-on-device
        value must be a fresh tensor or a name not updated in place in the loop (``.detach()``
        shares storage). A logging helper the loop calls (``log_metrics(loss)``) is not seen
        (known miss). A moved ``synchronize()`` that guarded something other than timing must be
        put back.
    """

    code: ClassVar[str] = "NRN603"
    name: ClassVar[str] = "host-sync-logging"
    summary: ClassVar[str] = "per-step logging of device values (loss.item(), set_postfix, add_scalar) moved under a logging interval"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = _TRIGGERS
    trigger_pattern: ClassVar[str] = _TRIGGER_PATTERN
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN604": "per-step torch.cuda/neuron.synchronize() moved under the logging interval",
        "NRN607": "per-step logging in a loop with no step counter: review marker",
        "NRN608": "metric logger meters keep device values and read them when they are read (printed): no per-step .item()",
        "NRN611": "a per-step read of a value only an interval branch refreshes, read once in that branch",
        "NRN612": "metrics read from the device every step only for a logger that may not exist: read only when it does",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = _ORDER

    def visit_Module(self, node: cst.Module) -> None:
        analysis = self.analysis(HostSyncAnalysis)
        self._fed: set[int] = set()
        moved_loops: dict[int, StepLoop] = {}
        created: set[int] = set()
        blocks: dict[int, tuple[cst.CSTNode, int]] = {}
        for site in analysis.of_kind(LOG, SYNCHRONIZE):
            if self._move(site, created):
                moved_loops[id(site.loop.node)] = site.loop
                block = self.parent(site.statement)
                if isinstance(block, cst.IndentedBlock):
                    _tally(blocks, block)
        for block, count in blocks.values():
            if count > 1:
                self.replace(block, _merge_adjacent(created), None, code="NRN603")
        for loop in moved_loops.values():
            if loop.needs_enumerate:
                self._add_enumerate(loop)
        if any(loop.uses_constant for loop in moved_loops.values()) and not self._has_constant(node):
            self._insert_constant(analysis)
        for plan in analysis.meters:
            self._port_meter(plan)
        refreshed_blocks: dict[int, cst.CSTNode] = {}
        refreshed: set[int] = set()
        for refresh in analysis.refreshes:
            self._read_where_refreshed(refresh, refreshed)
            block = self.parent(refresh.site.statement)
            if block is not None:
                refreshed_blocks[id(block)] = block
        for block in refreshed_blocks.values():
            self.replace(block, _merge_adjacent(refreshed, into_any_branch=True), None, code="NRN611")
        guards: set[int] = set()
        guarded_blocks: dict[int, tuple[cst.CSTNode, int]] = {}
        for unlogged in analysis.unlogged:
            self._guard_unlogged(unlogged, guards, guarded_blocks)
        for block, count in guarded_blocks.values():
            if count > 1:  # adjacent guards of one block: one `if`
                self.replace(block, _merge_adjacent(guards), None, code="NRN612")

    def _guard_unlogged(self, plan: Unlogged, created: set[int], blocks: dict[int, tuple[cst.CSTNode, int]]) -> None:
        """NRN612: the statements reading device values into a dict only a logger reads run when it exists."""
        code, test = "NRN612", plan.test
        said = f"{plan.name} is read only by " + "; and by ".join(f"{call}, {why}" for call, why in plan.consumers)
        marker = f"{MARKER_PREFIX} {code} {said}: its device values are read only when {test} (then as often as before)"
        for place, statement in enumerate(plan.statements):
            shown = _describe(statement.body[0], self.context.module)
            lines = [cst.EmptyLine(indent=True, comment=cst.Comment(marker))] if place == 0 else []
            message = f"{shown} only when {test} ({said})"
            if statement is plan.binding:
                self.replace(statement, _logger_only_dict(test, lines), message, code=code)
                continue
            block = self.parent(statement)
            if block is not None:
                _tally(blocks, block)
            self.replace(statement, _under_logger(test, lines, created), message, code=code, wraps=True)

    def _read_where_refreshed(self, plan: Refresh, created: set[int]) -> None:
        """NRN611: the per-step read of what the branch refreshes is read in the branch, once."""
        site, module = plan.site, self.context.module
        assert isinstance(site.node, cst.Assign)
        names = ", ".join(plan.refreshed)
        test = module.code_for_node(plan.branch.test).strip()
        marker = (
            f"{MARKER_PREFIX} NRN611 deliberate: read where {names} is refreshed (logging interval), not"
            f" {site.loop.every}: the same value at every step unless {names} changes in place"
        )
        shown = _describe(site.node.value, module)
        kept = "" if plan.moves_whole else f"; the statement reads {plan.name}"
        message = f"{shown} read under `if {test}:`, where {names} is refreshed (was {site.loop.every}, the same value{kept})"
        self.replace(site.statement, _read_after_branch(plan, test, marker, created), message, code="NRN611", drops_calls=True)

    def _port_meter(self, plan: MeterPlan) -> None:
        """The meter keeps tensors (detached copies) and reads them back, in order, when it is read."""
        code = "NRN608"
        value, count, torch = plan.value, plan.count, plan.torch
        kept = f"({value}.detach().clone(), {count})" if count else f"{value}.detach().clone()"
        name = plan.meter.name.value
        first, before_first = plan.init_anchor  # first: a method __init__ calls may read the meter
        pending = [cst.parse_statement(f"self.{PENDING} = []  # tensors update() keeps until the meter is read\n")]
        (self.insert_before if before_first else self.insert_after)(first, pending, None, code=code)
        guard = cst.parse_statement(
            f"if isinstance({value}, {torch}.Tensor):  # read when the meter is read, not every step\n"
            f"    self.{PENDING}.append({kept})\n"
            f"    return\n"
        )
        statement, before = plan.update_anchor
        new = [guard, cst.parse_statement(f"self.{READ}()\n")]
        message = f"{name}.update keeps device values; they are read when the meter is read (printed), not every step"
        (self.insert_before if before else self.insert_after)(statement, new, message, code=code)
        loop = f"for {value}, {count} in pending:\n        self.update({value}.item(), {count})\n" if count else (
            f"for {value} in pending:\n        self.update({value}.item())\n"
        )
        method = cst.parse_statement(
            f"def {READ}(self):\n"
            f'    """Read the tensors update() kept, in order (where the meter is read: its printing interval)."""\n'
            f"    pending, self.{PENDING} = self.{PENDING}, []\n"
            f"    {loop}"
        ).with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        self.insert_after(plan.update, [method], None, code=code)
        for _method, anchor, before in plan.readers:
            read = [cst.parse_statement(f"self.{READ}()\n")]
            (self.insert_before if before else self.insert_after)(anchor, read, None, code=code)
        for branch, _item, call in plan.logger_ifs:
            def keep(updated: cst.CSTNode, call: str = call) -> cst.CSTNode:
                assert isinstance(updated, cst.If)
                body = [cst.parse_statement(f"{call}  # the meter reads it when it prints\n"), cst.parse_statement("continue\n")]
                return updated.with_changes(body=updated.body.with_changes(body=body))

            self.replace(branch, keep, f"tensors go to the {name} meter as they are (no .item() every step)", code=code)
        for item in plan.stripped:
            shown = _describe(item, self.context.module)
            self.replace(item, _unread, f"{shown} -> the tensor: the {name} meter reads it when it prints", code=code, drops_calls=True)

    def _move(self, site: Site, created: set[int]) -> bool:
        loop = site.loop
        shown = _describe(site.node, self.context.module)
        code = "NRN604" if site.kind == SYNCHRONIZE else "NRN603"
        counter = site.counter or loop.counter
        if counter is None:
            what = "synchronize()" if site.kind == SYNCHRONIZE else "logging"
            self.mark(
                site.node,
                f"{what} syncs with the host {loop.every}: add a step counter and run it every N steps",
                code="NRN607",
            )
            return False
        test = f"{counter} % {loop.interval} == 0"
        if site.kind == SYNCHRONIZE:
            marker = f"deliberate: synchronize() every {loop.interval} {loop.unit} (timing interval; was {loop.every})"
            message = f"synchronize() moved under `if {test}:` (was {loop.every})"
        else:
            marker = f"deliberate: host sync every {loop.interval} {loop.unit} (logging interval; was {loop.every})"
            message = f"{shown} moved under `if {test}:` (was {loop.every}; output every {loop.interval} {loop.unit})"
        extra: tuple[cst.BaseStatement, ...] = ()
        for feeder in site.feeders:
            self._feed(feeder, site)
        mean = site.mean
        if mean is not None:
            marker = (
                f"deliberate: host sync every {loop.interval} {loop.unit} (logging interval; logs the mean of"
                f" {mean.name} over the interval, was one step's value {loop.every})"
            )
            message = f"{shown} moved under `if {test}:` as the mean of {mean.name} over the interval (was {loop.every})"
            extra = (mean.reset.with_changes(leading_lines=()), cst.parse_statement(f"{mean.count} = 0\n"))
            for read in mean.reads:
                self.replace(read, _mean_read(mean.count), None, code=code)
            self.remove_statement(mean.reset, None, code=code)
            self.insert_before(site.statement, [cst.parse_statement(f"{mean.count} += 1\n")], None, code=code)
            self.insert_after(mean.init, [cst.parse_statement(f"{mean.count} = 0\n")], None, code=code)
        carried: list[cst.BaseStatement] = []
        if site.carried is not None:
            # The assignment is rebuilt inside the `if` from its updated form (its syncs may be edited).
            self.replace(site.carried, _taken_into(carried), None, code=code)
            message += f"; `{_describe(site.carried, self.context.module)}` moved with it"
        transform = _under_interval(test, f"{MARKER_PREFIX} {code} {marker}", created, extra, carried)
        self.replace(site.statement, transform, message, code=code)
        return True

    def _feed(self, feeder: Feeder, site: Site) -> None:
        """``d_x = out.mean().item()`` -> ``.detach()``; its reads in the moved log -> ``d_x.item()``."""
        if id(feeder) not in self._fed:
            self._fed.add(id(feeder))
            shown = _describe(feeder.statement, self.context.module)
            self.replace(
                feeder.sync,
                _detached,
                f"{shown}: kept on the device, read with .item() where it is logged (no host sync {site.loop.per})",
            )
        for read in feeder.reads:  # every read is in a log statement that moves (intervals.py)
            if id(read) not in self._fed:
                self._fed.add(id(read))
                self.replace(read, _read_item, None)

    def _add_enumerate(self, loop: StepLoop) -> None:
        counter = loop.counter
        assert counter is not None and isinstance(loop.node, cst.For)

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.For)
            target = updated.target
            if isinstance(target, cst.Tuple) and not target.lpar:
                target = target.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            pair = cst.Tuple(
                elements=[cst.Element(cst.Name(counter), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), cst.Element(target)],
                lpar=[],
                rpar=[],
            )
            return updated.with_changes(target=pair, iter=cst.Call(func=cst.Name("enumerate"), args=[cst.Arg(updated.iter)]))

        self.replace(loop.node, transform, f"step counter `{counter}` added with enumerate() for the logging interval", code="NRN603")

    def _has_constant(self, module: cst.Module) -> bool:
        for statement in module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and any(dotted(t.target) == CONSTANT for t in small.targets):
                        return True
        return False

    def _insert_constant(self, analysis: HostSyncAnalysis) -> None:
        anchor = analysis.constant_anchor
        if anchor is None:
            return
        statement = cst.parse_statement(
            f"{CONSTANT} = {int(self.options.log_interval)}  # steps between logged (host-synchronising) values\n"
        )
        message = f"{CONSTANT} = {self.options.log_interval} added (--log-interval)"
        if analysis.constant_before:
            self.insert_before(anchor, [statement], message, code="NRN603")
        else:
            spaced = statement.with_changes(leading_lines=[cst.EmptyLine()])
            self.insert_after(anchor, [spaced], message, code="NRN603")


class HostSyncControlFlow(Rule):
    """Mark host syncs that feed control flow, and the per-step syncs no rule could move.

    What it does:
        In a step loop, a ``.item()``/``float(t)``/``bool(t)`` or an implicit truth test of a
        tensor that decides control flow — ``if not math.isfinite(loss.item()):``,
        ``if torch.isnan(loss):``, ``if loss < best:``, ``loss_value = loss.item()`` later tested,
        ``assert`` — stays and gets an NRN602 marker naming the cost and the on-device
        alternative. Any other ``.item()``/``.tolist()``/``.numpy()`` left on the per-step path
        (``metric_logger.update(loss=loss.item())``) gets an NRN606 marker, including those inside a
        function or method of the same file that the loop calls every step (``f()``, ``self.m()``,
        ``obj.m()`` with ``obj = LocalClass(...)``; one call level deep), such as a
        ``MetricLogger.update`` that calls ``v.item()`` (unless the logging rule keeps its values in
        the meters, NRN608), and logging statements the logging rule
        left every step because what they print syncs every step anyway. A ``return loss_val.item()``
        of a function the loop calls every step is control flow (NRN602) when the loop tests what
        it returns (``losses.append(train(epoch))`` then ``if losses[-1] < best:``). Only NRN602 (and the
        logging rule's interval markers) say ``deliberate:``; NRN606 markers name a sync to remove.

    Why:
        Each of these waits for the device every step. Control flow on a device value cannot be
        moved without changing the program, so a person decides: check on the device
        (``torch.isfinite(loss)``) and read it every N steps, or accept the sync.

    Before:
        if not math.isfinite(loss.item()):
            raise RuntimeError("loss diverged")

    After:
        # porter: NRN602 deliberate: loss.item() decides control flow (one host sync every step); to drop it, ...
        if not math.isfinite(loss.item()):
            raise RuntimeError("loss diverged")

    Safety:
        Review markers only; code is unchanged. Tensor names are recognised by use (receivers of
        ``.backward()``/``.item()``/``.detach()``, names like ``loss`` assigned from a call); a tensor
        under another name tested with ``if t > 0`` is missed. Syncs inside an interval branch
        (``if step % N == 0``) or a one-shot branch (ending in ``break``/``raise``) are not marked,
        nor those after an early exit taken off the interval (``if not should_log: return`` with
        ``should_log = step % N == 0``, ``if step % N != 0: continue``; an interval method the
        script names for it, ``metrics.should_log(step)`` / ``is_log_step(step)``, counts as one, by
        name), nor those in a helper after ``if ok: return`` when the helper then ends in
        ``raise`` (the error path of a finite check); the helper's own value test
        (``if torch.isfinite(t).all():``) is marked (NRN602: it syncs every step), nor reads of a tensor the same function builds on the CPU (``starts = torch.randint(...)``
        with no ``device=``, no ``set_default_device`` in the file): they wait for no device.
    """

    code: ClassVar[str] = "NRN602"
    name: ClassVar[str] = "host-sync-control-flow"
    summary: ClassVar[str] = "per-step .item() that feeds control flow (NaN checks, early stopping): review marker"
    safety: ClassVar[Safety] = Safety.REVIEW
    triggers: ClassVar[tuple[str, ...]] = _TRIGGERS
    trigger_pattern: ClassVar[str] = _TRIGGER_PATTERN
    extra_codes: ClassVar[dict[str, str]] = {
        "NRN606": "another host sync left on the per-step path: review marker",
    }
    requires_port_context: ClassVar[bool] = True
    order: ClassVar[int] = _ORDER

    def visit_Module(self, node: cst.Module) -> None:
        analysis = self.analysis(HostSyncAnalysis)
        module = self.context.module
        marked: set[tuple[int, str]] = set()  # one marker per statement and code
        for site in analysis.of_kind(CONTROL):
            shown = _describe(site.syncs[0], module) if site.syncs else "a tensor"
            text = module.code_for_node(site.node) + site.note
            if any(word in text for word in ("isfinite", "isnan", "isinf")):
                advice = "to drop it, test on the device (torch.isfinite) and read the flag every N steps"
            else:
                advice = "to drop it, compare on the device (torch.minimum/torch.where) and read it every N steps"
            if self._once(site, "NRN602", marked):
                self.mark(site.node, f"deliberate: {shown} decides control flow (one host sync {site.loop.every}); {advice}")
        for site in analysis.of_kind(RESIDUAL):
            if not self._once(site, "NRN606", marked):
                continue
            shown = _describe(site.syncs[0], module)
            if site.kept:
                message = f"logging left {site.loop.every}: {site.note}"
            else:
                where = f" ({site.note})" if site.note else ""
                message = f"{shown} syncs with the host {site.loop.every}{where}: keep it on the device or read it every N steps"
            self.mark(site.node, message, code="NRN606")

    def _once(self, site: Site, code: str, marked: set[tuple[int, str]]) -> bool:
        key = (id(self.statement_of(site.node)), code)
        if key in marked:
            return False
        marked.add(key)
        return True
