"""NRN101: CUDA device strings in device positions become ``neuron`` strings."""

from __future__ import annotations

import re
from typing import ClassVar, cast

import libcst as cst

from porter.engine.changes import Safety
from porter.engine.rule import Rule
from porter.rules._lib.args import positional
from porter.rules._lib.branches import (
    guarding_tests,
    in_kept_cuda_branch,
    in_kept_cuda_test,
    is_availability_test,
    under_availability_test,
)
from porter.rules._lib.device import (
    ACCELERATOR_TYPE,
    ACCELERATOR_TYPE_OR_CUDA,
    CUDA_TEMPLATE,
    DEVICE_KEYWORDS,
    DEVICE_NAME,
    DEVICE_POSITIONS,
    LocalCallees,
    accelerator_string,
    cuda_call_index,
    cuda_string,
    device_named,
    map_location_cuda_call,
    neuron_string,
    profiler_activity,
    retorch,
    torch_ref,
)
from porter.rules._lib.integers import NoneNames
from porter.rules._lib.nodes import dotted, method_name, string_value
from porter.rules._lib.precision import ScalerStays, autocast_ports_device
from porter.rules._lib.tree import child_index

_MESSAGE_CALLS = frozenset({"print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "write", "set_description", "set_postfix"})


_ENUMS = frozenset({"enum.Enum", "enum.IntEnum", "enum.StrEnum"})
# A device table's CUDA fields and what a NEURON member holds instead (the device type, its
# display names, the communication backend: TorchNeuron's process-group backend is "neuron").
_NEURON_FIELDS = {"cuda": "neuron", "CUDA": "NEURON", "GPU": "NEURON", "gpu": "neuron", "nccl": "neuron"}
_OTHER_ACCELERATORS = re.compile(r"""["'](mps|xpu)(:\d+)?["']""")
# A trailing comment that says the device must be CUDA ("always binds to CUDA", "CUDA only").
_TIED_TO_CUDA = re.compile(r"(?i)\b(always|binds?|bound|requires?|must)\b.*\bcuda\b|\bcuda\b[- ](only|required)\b")
# Accelerator style, a parameter default: the accelerator's type, or "cpu" where there is none.
_DEFAULT_TYPE = '(torch.accelerator.current_accelerator() or torch.device("cpu")).type'
# A user's name for the CUDA device class that a file translates to "cuda" (composer's "gpu").
_CUDA_ALIASES = frozenset({"gpu"})


def _index_fstring(node: cst.CSTNode) -> bool:
    """Exactly ``f"cuda:{expr}"``: only ever a device spelling, wherever it appears."""
    if not isinstance(node, cst.FormattedString) or len(node.parts) != 2:
        return False
    first, second = node.parts
    return isinstance(first, cst.FormattedStringText) and first.value == "cuda:" and isinstance(second, cst.FormattedStringExpression)
# In --style accelerator a test "is it CUDA?" becomes "is it not the CPU?" (the negated operator).
_NEGATED: dict[type, type] = {
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
    cst.In: cst.NotIn,
    cst.NotIn: cst.In,
}

_AUTOCAST = ("torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast")

# String methods whose first argument, on a device-named receiver, is a device spelling.
_STRING_METHODS = frozenset({"startswith", "endswith", "replace", "removeprefix", "split", "partition"})

# Callables whose first positional argument is a device (or device type).
_DEVICE_FIRST_ARG = frozenset(
    {
        "torch.device",
        "torch.set_default_device",
        "torch.autocast",
        "torch.amp.autocast",
        "torch.get_device_module",
        "torch.Generator",
        "torch.distributed.init_device_mesh",
        "torch.distributed.device_mesh.init_device_mesh",
    }
)
# Calls that take text (messages, logs), not devices (the verifier's list: porter/engine/verify.py).
_TEXT_CALLS = frozenset({"print", "format", "write", "info", "debug", "warning", "warn", "error", "log", "append", "join", "echo", "set_description", "set_postfix"})
# Accelerators other than CUDA/Neuron/CPU: a list naming one lists backends (the verifier's set).
_OTHER_BACKENDS = frozenset({"xpu", "npu", "mps", "hpu", "mlu", "musa", "xla", "tpu", "ipu", "dipu", "sdaa", "supa", "klxpu", "rocm", "hip"})
_DEVICE_CALLEE = re.compile(r"(?i)(^|_)devices?$")
# A default read with a device-named key: getattr(args, "device", "cuda"), cfg.get("device", "cuda").
_DEFAULT_GETTERS = {"get": 1, "pop": 1, "setdefault": 1}


class DeviceStrings(Rule):
    """Port CUDA device strings where they are used as devices.

    What it does:
        Rewrites ``"cuda"``, ``"cuda:N"`` and ``f"cuda:{rank}"`` to ``"neuron"``, ``"neuron:N"``
        and ``f"neuron:{rank}"`` where the string is a device: the first argument of
        ``torch.device``/``.to()``/``torch.set_default_device``, a ``device=``/``map_location=``/
        ``device_type=`` keyword, the device parameter of a library callee given by position
        (``torch.load(path, "cuda")``, ``safetensors.torch.load_file(path, "cuda:0")``,
        ``DeviceMesh("cuda", ...)``: ``rules/_lib/device.py: DEVICE_POSITIONS``, by qualified
        name), an argument bound to a device-named parameter of a function or class this file
        defines that its body uses as a device as it is (``.to(p)``, ``device=p``,
        ``torch.device(p)``, ``self.policy_device = p``; not ultralytics'
        ``get_torch_device_backend(device or "cuda")``, which only inspects it to pick a device
        module, where ``"neuron"`` raises on a CPU-only torch) (``make_env(env_device="cuda")``, ``Actor(cfg, "cuda")`` with ``def
        __init__(self, cfg, policy_device)``, ``self.buffer(storing_device="cuda:0")``), a value assigned to or defaulting a device-named variable or
        parameter (``device``, ``self.device``, ``device_type``, ``dev``), a comparison or
        substring test against a device-named expression (``device.type == "cuda"``,
        ``"cuda" in device``), an element of a tuple/set/list such an expression is tested
        against (``device.type in ("cuda", "xpu")``, ``assert device_type in {"cuda"}``), the
        first argument of ``startswith``/``replace``/``split``... on a device-named value
        (``args.device.startswith("cuda")``, ``.replace("cuda:", "")``), a literal ``case``
        pattern of a ``match`` on a device-named subject, and either branch of a conditional
        expression in such a place. A ported availability test opens its branch on Neuron, so
        a string assigned to *any* name or returned in the branch of ``if
        torch.cuda.is_available():`` / ``device_count()`` (or chosen by ``... if
        torch.cuda.is_available() else ...``) is a device too, as is a string a device-named
        function returns (``def get_device(): return "cuda"``), and so is either value of a
        conditional expression whose test compares a device with a CUDA string (``kind = "cuda"
        if "cuda" in device else "cpu"``: the ported test picks it). A device type chosen that
        way at module level for an autocast also built at import time (nanoGPT: ``device_type =
        "cuda" if "cuda" in device else "cpu"``, ``ctx = torch.amp.autocast(device_type=device_type)``)
        gets ``and torch.accelerator.is_available()`` in its test: on a CPU-only torch CUDA's
        autocast only disabled itself, an autocast of ``"neuron"`` raises without torch-neuronx,
        so the import would fail; with the guard it gets ``"cpu"`` there and is unchanged
        wherever an accelerator is present. The ``"cuda"`` default of an option or a lookup
        (``add_argument("--device", default="cuda")``, ``getattr(args, "device", "cuda")``,
        ``cfg.get("device", "cuda:0")``), read on every host, becomes ``"neuron" if
        torch.accelerator.is_available() else "cuda"``: where no accelerator is present the
        script sees its old value and its own fallback decides, as before (``torch.device("neuron")``
        raises without torch-neuronx; open_clip parses the default before testing availability).
        The device string of an autocast built at import
        time, and a ``"cuda"`` default of a parameter an autocast takes as its device, are left
        to NRN201, which ports them in the same pass with that fallback.
        A device-type test whose CUDA branch holds CUDA-only code (``torch.cuda`` names with no
        Neuron counterpart, Triton/Inductor, ``channels_last``, ``DataParallel``, CUDA/NCCL
        environment variables, the CUDA-only libraries: ``rules/_lib/branches.py``) is kept with its
        branch: the old meaning, "skip it off CUDA", is already right on Neuron, and a ported test
        would run that code there. In a file that imports a CUDA kernel language (triton, helion,
        numba.cuda, or torch.utils.cpp_extension's builds: ``KernelFile`` there) every comparison of a device with a CUDA literal is kept
        (``return device.type in ("cuda", "xpu")`` choosing the Triton path): Neuron takes the torch
        path, as the CPU did. So is a feature gate (``if flag and device.type != "cuda":
        flag = False`` or ``raise``) of a flag that turns on CUDA-only code elsewhere in the file
        (torchtune's peak-memory stats, its CUDA-stream activation offloading): the feature stays
        off, or refused, where it cannot run. Two device strings are kept with a review marker: one on a
        line whose comment ties it to CUDA (``# the simulator always binds to CUDA``: a CUDA-only
        component outside the file), and the ``"cuda"`` a file assigns when the user's device name
        is ``"gpu"`` (the user's explicit choice of the CUDA device class). A device string in a
        conditional expression whose other choice is a name assigned, in the same scope, on such a
        tied line (``train = torch.device("cuda:1") if n > 1 else sim_device``) is kept and
        marked with it: one device decision is not split between Neuron and a kept CUDA device.
        A ``"cuda"`` given as ``accelerator=`` (Lightning's ``Fabric(accelerator="cuda")``) names the
        library's own CUDA accelerator, not a torch device: kept with a review marker.
        Index templates ``"cuda:{}".format(i)`` / ``"cuda:%d" % i`` are ported wherever they
        appear (they only ever spell a device), and so is exactly ``f"cuda:{expr}"`` (``loc =
        f"cuda:{gpu_id}"``) unless it is inside a print/log/exception message. ``torch.load(map_location=lambda storage, loc:
        storage.cuda(i))`` becomes ``map_location=f"neuron:{i}"`` (``"neuron"`` without index);
        in ``map_location={"cuda:0": "cuda:1"}`` the values are ported and the keys (where the
        checkpoint was saved) are kept. A parameter default ``device=torch.device("cuda")`` is
        evaluated at import time, where ``torch.device("neuron")`` raises without torch-neuronx:
        it becomes the string ``device="neuron"`` (accepted wherever torch takes a device),
        unless the function reads the parameter's ``.type``/``.index`` (then the explicit
        ``torch.device("neuron")``).

        With ``--style accelerator`` a produced device string becomes device-generic:
        ``"cuda"`` -> ``torch.accelerator.current_accelerator().type`` (as a parameter default,
        evaluated at import time: ``(torch.accelerator.current_accelerator() or
        torch.device("cpu")).type``, so the file still imports without an accelerator), ``"cuda:1"``/
        ``f"cuda:{r}"`` -> ``f"{torch.accelerator.current_accelerator().type}:{r}"``; a test
        "is it CUDA?" becomes "is it not the CPU?": ``device.type == "cuda"`` ->
        ``device.type != "cpu"``, ``"cuda" in device`` -> ``"cpu" not in device`` — except in a
        file that also tests for ``"mps"``/``"xpu"`` (a "not the CPU" test would swallow those
        branches), where ``"cuda"`` becomes ``getattr(torch.accelerator.current_accelerator(),
        "type", "cuda")`` (the present accelerator's type; "cuda" on a CPU-only host, where the test
        stays false as before); so does ``"cuda"`` in a set or tuple an ``in`` test reads
        (``{"cpu", "cuda", "xpu"}``), which runs on every host, and so does the ``"cuda"`` default
        of an option or a lookup (``add_argument(default="cuda")``, ``getattr(args, "device",
        "cuda")``, ``cfg.get("device", "cuda")``), read on every host, ``--help`` included.

    Why:
        On Trainium the PyTorch device type is ``neuron`` (``neuron:N`` with an index; the index of a
        process in a distributed job equals its local rank). A ``"cuda"`` device raises on a
        machine without CUDA. Both sides of substring tests are ported together: porting only the
        assignment would make ``"cuda" in device`` false on Neuron and silently take the CPU branch
        (for example turning autocast off).

    Before:
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        x = torch.zeros(4, device="cuda")
        device_type = "cuda" if "cuda" in device else "cpu"

    After:
        device = torch.device("neuron:0" if torch.accelerator.is_available() else "cpu")
        x = torch.zeros(4, device="neuron")
        device_type = "neuron" if "neuron" in device else "cpu"

    Safety:
        Safe. Name heuristic: an expression holds a device when its last dotted part matches
        ``device``/``devices``/``dev``/``device_type``/``map_location``/``accelerator`` as a
        ``_``-separated word (``train_device``, ``self.device``), or ends in ``.type``
        (``x.device.type``), or is ``str(...)`` of such a name. Strings that are not in a device
        position (log messages, dict keys, comments, ``"cuda"`` compared with something that is
        not device-named) are left alone; a device string reached only through an unrelated
        variable name is missed (not changed), and a display label assigned under ``if
        torch.cuda.is_available():`` (``label = "cuda"``) is ported as a device (known miss).
        A call's argument is resolved to its parameter only for a function defined once in the
        file (any depth, not a method), a module-level class's ``__init__``, ``self.method``
        in its own class, and ``buffer.method`` where every assignment of ``buffer`` in the
        function builds one class of this file (``buffer = ReplayBuffer(...)``:
        ``rules/_lib/device.py: LocalCallees``), and a function or class defined once at the top
        level of a project module the file imports (``from utils import make_agent``, ``import
        utils``, ``from .env import Worker``: a file of the project, listed by the runner with its
        digest, ``porter/run/local_imports.py``; ``ImportedCallees``); a callee from an installed
        library (torchrl's ``Collector(storing_device=...)``), a method of an imported class, or a
        module the run cannot read (``porter.api.port_source`` on text alone) is not read, so its
        CUDA argument keeps the review marker.
        ``map_location`` lambdas are recognised only in the form ``lambda s, l: s.cuda(...)``
        (the first parameter's ``.cuda``); other callables are left alone. Accelerator style:
        ``current_accelerator()`` is None on a machine with no accelerator, so an unguarded
        ``"cuda"`` fails there as the original did; the "not the CPU" tests also count ``meta``
        tensors as on the accelerator.
    """

    code: ClassVar[str] = "NRN101"
    name: ClassVar[str] = "device-strings"
    summary: ClassVar[str] = 'CUDA device strings ("cuda", "cuda:N", f"cuda:{rank}") in device positions -> "neuron"'
    safety: ClassVar[Safety] = Safety.SAFE
    triggers: ClassVar[tuple[str, ...]] = ("cuda",)
    order: ClassVar[int] = 10

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._consider(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """An Enum of per-device settings (torchtune's ``DeviceSupport``: ``CUDA = ("cuda",
        "GPU", "nccl")`` beside ``NPU``/``XPU``/``CPU`` members, looked up by device type, which
        raises for a type it does not list): the port makes the host's type "neuron", so the
        table gets a ``NEURON`` member built from the CUDA one (corpus review round 8, H14)."""
        if not any(self.qualified(base.value) & _ENUMS for base in node.bases) or not isinstance(node.body, cst.IndentedBlock):
            return
        members: dict[str, tuple[cst.SimpleStatementLine, cst.Tuple]] = {}
        for line in node.body.body:
            if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
                continue
            small = line.body[0]
            if (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
                    and isinstance(small.value, cst.Tuple) and small.value.elements):
                kind = string_value(small.value.elements[0].value)
                if kind is not None:
                    members[kind] = (line, small.value)
        if "cuda" not in members or "neuron" in members or not (set(members) & _OTHER_BACKENDS):
            return
        line, values = members["cuda"]
        assign = line.body[0]
        assert isinstance(assign, cst.Assign)
        name = cast(cst.Name, assign.targets[0].target).value
        texts = [string_value(element.value) for element in values.elements]
        if any(text is None for text in texts) or not any(part in name.lower() for part in ("cuda", "gpu")):
            return
        mapped = [_NEURON_FIELDS.get(cast(str, text)) for text in texts]
        if any(text is None for text in mapped):
            self.mark(line, "a table of device types without a neuron entry: the port makes the device type \"neuron\", add a NEURON member")
            return
        new_name = re.sub("(?i)cuda|gpu", lambda m: "NEURON" if m.group().isupper() else "neuron", name)
        fields = ", ".join(f'"{text}"' for text in mapped)
        member = cst.parse_statement(f"{new_name} = ({fields})\n")
        self.insert_after(line, [member], f"device table: a {new_name} member beside {name} (the port makes the device type \"neuron\")",
                          safety=Safety.REVIEW)
        self.mark(line, f"{new_name} added below, built from {name}: check its fields for Neuron (name, communication backend)")

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> bool:
        return False

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._consider(node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        # nanoGPT: device = "cuda" (module level), then device_type = "cuda" if "cuda" in device
        # else "cpu" and ctx = torch.amp.autocast(device_type=device_type) at import time. On a
        # CPU-only torch the original's CUDA autocast only disables itself (a warning); an
        # autocast of "neuron" raises without torch-neuronx. The ported test also asks for the
        # accelerator, so a CPU-only import gets the CPU type, as the disabled autocast was.
        if self.options.style == "accelerator" or not cuda_string(node.body) or self._in_function(node):
            return
        if in_kept_cuda_test(self, node.body) or is_availability_test(self, node.test):
            return
        if not any(cuda_string(inner) and self._in_device_position(inner) for inner in child_index(self).walk(node.test)):
            return
        holder = self.parent(node)
        if not (isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name)):
            return
        if not self._import_time_autocast(holder.targets[0].target.value):
            return
        name, imports = torch_ref(self.context.module)
        available = cst.parse_expression(f"{name}.accelerator.is_available()")

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            test = cast(cst.BaseExpression, updated)
            if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.NamedExpr, cst.Lambda)) and not test.lpar:
                test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return cst.BooleanOperation(left=test, operator=cst.And(), right=available)

        message = "device type for an autocast built at import time: the test also asks for the accelerator (a CPU-only import gets \"cpu\", as CUDA's autocast disabled itself there)"
        self.replace(node.test, transform, message, imports=imports)

    def _tests_cuda_device(self, test: cst.CSTNode) -> bool:
        """``test`` compares a device-named value with a CUDA string this rule ports."""
        return any(
            cuda_string(inner)
            and (self._comparison_of(inner) is not None or self._string_method_argument(inner))
            and self._in_device_position(inner)
            for inner in child_index(self).walk(test)
        )

    def _in_function(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, (cst.FunctionDef, cst.Lambda)) for a in self.ancestors(node))

    def _import_time_autocast(self, name: str) -> bool:
        """An autocast built outside any function (at import time) takes ``name`` as its device type."""
        for inner in child_index(self).preorder:
            if not isinstance(inner, cst.Call) or not self.matches(inner.func, *_AUTOCAST):
                continue
            arg = positional(inner, 0) or next((a for a in inner.args if a.keyword is not None and a.keyword.value == "device_type"), None)
            if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == name and not self._in_function(inner):
                return True
        return False

    def visit_Lambda(self, node: cst.Lambda) -> None:
        call = map_location_cuda_call(node)
        arg = self.parent(node)
        if call is None or not isinstance(arg, cst.Arg) or arg.keyword is None or arg.keyword.value != "map_location":
            return
        index = cuda_call_index(call)
        if self.options.style == "accelerator":
            name, imports = torch_ref(self.context.module)
            text = "torch.accelerator.current_accelerator()" if index is None else self._accelerator_index(index)
            new = cst.parse_expression(retorch(text, name))
            self.replace(node, new, "map_location lambda .cuda() -> accelerator device", imports=imports, drops_calls=True)
            return
        self.replace(node, self._neuron_index(index), 'map_location lambda storage.cuda() -> "neuron"', drops_calls=True)

    def _neuron_index(self, index: cst.BaseExpression | None) -> cst.BaseExpression:
        if index is None:
            return cst.SimpleString('"neuron"')
        if isinstance(index, cst.Integer):
            return cst.SimpleString(f'"neuron:{index.value}"')
        if device_named(index):
            return index
        text = self.context.module.code_for_node(index)
        quote = "'" if '"' in text else '"'
        if self.analysis(NoneNames).may_be_none(self, index):  # storage.cuda(None): the current device
            return cst.parse_expression(f'"neuron" if {text} is None else f{quote}neuron:{{{text}}}{quote}')
        return cst.parse_expression(f"f{quote}neuron:{{{text}}}{quote}")

    def _accelerator_index(self, index: cst.BaseExpression) -> str:
        text = self.context.module.code_for_node(index)
        return text if device_named(index) else f"torch.device({text})"  # an int index means the current accelerator

    def _consider(self, node: cst.BaseExpression) -> None:
        if self._template(node):
            return
        if not cuda_string(node) and not (string_value(node) == "cuda:" and self._string_method_argument(node)):
            return
        if profiler_activity(self, node):
            return  # a profiler activity, not a device: NRN111 marks it
        if self._old_torch_arm(node):
            return  # runs only on a torch without torch.accelerator (< 2.6), never beside torch-neuronx
        if self._accelerator_keyword(node):
            self.mark(node, 'accelerator="cuda" picks the library\'s own CUDA accelerator (Lightning/Fabric): kept; the library needs a Neuron accelerator of its own to run on Trainium')
            return
        if not self._in_device_position(node) and not (_index_fstring(node) and not self._in_message(node) and not self._is_key(node)):
            callee = self._unknown_call_argument(node)
            if callee is not None and not in_kept_cuda_test(self, node) and not in_kept_cuda_branch(self, node):
                wanted = ACCELERATOR_TYPE if self.options.style == "accelerator" else '"neuron"'
                self.mark(node, f"CUDA device string {self.context.module.code_for_node(node)} passed to {callee}: not known to be a torch device there, kept; if it is one, make it {wanted}")
            return
        if in_kept_cuda_test(self, node) or in_kept_cuda_branch(self, node):
            return  # a test whose CUDA branch is CUDA-only keeps its meaning (skip it off CUDA)
        if autocast_ports_device(self, node):
            return  # NRN201 ports it with the CPU fallback an import-time autocast needs
        if self._user_alias(node):
            self.mark(node, 'the user\'s "gpu" device name is translated to CUDA here: kept (an explicit choice); on Neuron the user passes "neuron"')
            return
        if self._comment_ties_to_cuda(node):
            self.mark(node, "the comment on this line ties the device to CUDA (a CUDA-only component): keep it on CUDA or replace the component")
            return
        kept = self._falls_back_to_tied(node)
        if kept is not None:
            self.mark(node, f"the other choice, {kept}, is kept on CUDA (its comment ties it to a CUDA-only component): this device is kept with it")
            return
        if self._kept_for_cpu_hosts(node):
            return  # the else of a ported default: the original value where no accelerator is present
        if self.options.style != "accelerator" and self._default_read_everywhere(node):
            # An option's or a lookup's default is read on every host, --help included: where no
            # accelerator is present it stays "cuda", the original's value, so the script's own
            # fallback decides as before (open_clip parses it with torch.device() before testing
            # availability: torch.device("neuron") raises without torch-neuronx).
            name, imports = torch_ref(self.context.module)

            def conditional(updated: cst.CSTNode) -> cst.CSTNode:
                assert isinstance(updated, cst.BaseExpression)
                return cst.IfExp(test=cst.parse_expression(f"{name}.accelerator.is_available()"),
                                 body=neuron_string(updated), orelse=updated)

            text = self.context.module.code_for_node(node)
            self.replace(node, conditional, f"default device {text} -> {cst.Module(body=[]).code_for_node(neuron_string(node))} "
                         f"where an accelerator is present, else {text} as before", imports=imports)
            return
        if self.options.style != "accelerator":
            default = self._default_device_call(node)
            if default is not None:
                # def f(device=torch.device("cuda")): the default is built at import time, where
                # torch.device("neuron") raises without torch-neuronx; the string is built lazily.
                self.replace(default, neuron_string(node), 'default torch.device("cuda") -> "neuron" (no device object at import time)', drops_calls=True)
                return
            self.replace(node, lambda n: neuron_string(cast(cst.BaseExpression, n)), 'device string "cuda" -> "neuron"')
            return
        if isinstance(self.parent(node), cst.MatchValue):
            # A case pattern is a literal or a dotted name, never a call: the device-generic
            # form cannot stand there (it did not re-parse).
            self.mark(node, 'case "cuda": a pattern cannot call torch.accelerator; match "neuron" too, or test torch.accelerator.current_accelerator().type in an if')
            return
        comparison = self._comparison_of(node)
        if comparison is not None and _OTHER_ACCELERATORS.search(self.context.text) and string_value(node) == "cuda":
            # "not the CPU" would swallow the file's own mps/xpu branches: compare with the present
            # accelerator's type ("cuda" where there is none: the test stays false on a CPU host).
            name, imports = torch_ref(self.context.module)
            text = retorch(ACCELERATOR_TYPE_OR_CUDA, name)
            self.replace(node, cst.parse_expression(text), f'test for "cuda" next to mps/xpu branches -> {ACCELERATOR_TYPE_OR_CUDA}', imports=imports)
            return
        if comparison is not None and _OTHER_ACCELERATORS.search(self.context.text):
            self.mark(node, 'test for a CUDA device next to mps/xpu branches: compare with torch.accelerator.current_accelerator().type')
            return
        if comparison is not None:
            self._flip_to_cpu(node, comparison)
            return
        name, imports = torch_ref(self.context.module)
        if string_value(node) == "cuda" and self._in_membership_collection(node):
            # {"cpu", "cuda", "xpu"} in a membership test is evaluated on every host: on a CPU-only
            # one current_accelerator() is None, where the set keeps its "cuda" (the same test).
            text = retorch(ACCELERATOR_TYPE_OR_CUDA, name)
            self.replace(node, cst.parse_expression(text), f'device string "cuda" in a set of device types -> {ACCELERATOR_TYPE_OR_CUDA}', imports=imports)
            return
        if self._default_read_everywhere(node):
            # An option's or a lookup's default is evaluated on every host, --help included: on a
            # CPU-only one current_accelerator() is None, where "cuda" is kept, as the original had
            # it (the script's own fallback then decides; accelerator round 2, H-B2; "cuda:0"
            # too, round 3).
            self.replace(
                node,
                lambda n: accelerator_string(cast(cst.BaseExpression, n), name, ACCELERATOR_TYPE_OR_CUDA),
                f'default device {self.context.module.code_for_node(node)} -> {ACCELERATOR_TYPE_OR_CUDA}',
                imports=imports,
            )
            return
        if isinstance(self.parent(node), cst.Param):
            # A default is evaluated at import time, where current_accelerator() is None on a
            # machine without one: the CPU keeps the file importable (a call-time choice).
            self.replace(
                node,
                lambda n: accelerator_string(cast(cst.BaseExpression, n), name, _DEFAULT_TYPE),
                f'default device {self.context.module.code_for_node(node)} -> {_DEFAULT_TYPE}',
                imports=imports,
            )
            return
        if self._autocast_device(node) or (not self._used_where_cuda_fails(node) and not under_availability_test(self, node)):
            # A device value that is only stored, listed or returned is evaluated on every host:
            # on a CPU-only one current_accelerator() is None, where the original's "cuda" is kept
            # (a benchmark's device list, accelerator round 3; the original ran there).
            self.replace(
                node,
                lambda n: accelerator_string(cast(cst.BaseExpression, n), name, ACCELERATOR_TYPE_OR_CUDA),
                f'device string {self.context.module.code_for_node(node)} -> {ACCELERATOR_TYPE_OR_CUDA} (evaluated on every host)',
                imports=imports,
            )
            return
        self.replace(
            node,
            lambda n: accelerator_string(cast(cst.BaseExpression, n), name),
            f'device string "cuda" -> {ACCELERATOR_TYPE}',
            imports=imports,
        )

    def _old_torch_arm(self, node: cst.BaseExpression) -> bool:
        """``node`` is in the fallback arm of a ``hasattr(torch, "accelerator")`` test
        (``current_accelerator().type if hasattr(torch, "accelerator") else "cuda"``: trl): that arm
        runs only on a torch older than 2.6, where the port's ``torch.accelerator`` does not exist."""
        child: cst.CSTNode = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.IfExp, cst.If)) and ancestor.orelse is child:
                test = ancestor.test
                if (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "hasattr"
                        and len(test.args) == 2 and self.qualified(test.args[0].value) == {"torch"}
                        and string_value(test.args[1].value) == "accelerator"):
                    return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
            child = ancestor
        return False

    def _autocast_device(self, node: cst.BaseExpression) -> bool:
        """``node`` is an autocast's device. NRN201 writes it in the same pass (one form, composed):
        the long one, guarded or not, since CUDA's autocast only disabled itself on a CPU-only host."""
        arg = self.parent(node)
        call = self.parent(arg) if isinstance(arg, cst.Arg) else None
        return isinstance(call, cst.Call) and self.matches(call.func, *_AUTOCAST)

    def _used_where_cuda_fails(self, node: cst.BaseExpression) -> bool:
        """``node`` is the device of a move or an allocation (``x.to("cuda")``, ``torch.zeros(n,
        device="cuda")``), which fails on a CPU-only host in the original too: the short form."""
        arg = self.parent(node)
        call = self.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or not isinstance(arg, cst.Arg):
            return False
        if self.matches_prefix(call.func, "torch.cuda.") or self.matches_prefix(call.func, "torch.accelerator."):
            return True  # a device call: it fails without an accelerator in the original too
        if self.matches(call.func, *_AUTOCAST):
            return False  # see _autocast_device
        if arg.keyword is not None:
            return arg.keyword.value == "device" and not self.matches(call.func, "torch.device")
        return isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and positional(call, 0) is arg

    def _kept_for_cpu_hosts(self, node: cst.BaseExpression) -> bool:
        """``"neuron" if torch.accelerator.is_available() else "cuda"``: ``node`` is the ``"cuda"`` a
        ported default keeps for hosts without an accelerator (one pass is a fixed point)."""
        parent = self.parent(node)
        return (isinstance(parent, cst.IfExp) and parent.orelse is node and isinstance(parent.test, cst.Call)
                and self.matches(parent.test.func, "torch.accelerator.is_available"))

    def _default_read_everywhere(self, node: cst.BaseExpression) -> bool:
        """``add_argument("--device", default="cuda")``, ``getattr(args, "device", "cuda")``,
        ``cfg.get("device", "cuda")``: the default of an option or a lookup."""
        arg = self.parent(node)
        call = self.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or not isinstance(arg, cst.Arg):
            return False
        if arg.keyword is not None:
            return arg.keyword.value == "default" and method_name(call) in {"add_argument", "get", "pop", "getenv"}
        if isinstance(call.func, cst.Name) and call.func.value == "getattr":
            return positional(call, 2) is arg
        return method_name(call) in {"get", "pop", "getenv"} and positional(call, 1) is arg

    def _in_membership_collection(self, node: cst.BaseExpression) -> bool:
        """``x in {"cpu", "cuda"}`` / ``not in ("cuda", "xpu")``: an element of the collection an
        ``in`` test looks in."""
        element = self.parent(node)
        collection = self.parent(element) if isinstance(element, cst.Element) else None
        target = self.parent(collection) if isinstance(collection, (cst.Set, cst.Tuple, cst.List)) else None
        return isinstance(target, cst.ComparisonTarget) and isinstance(target.operator, (cst.In, cst.NotIn)) and target.comparator is collection

    def _user_alias(self, node: cst.BaseExpression) -> bool:
        """``if device_name == "gpu": device_type = "cuda"``: the file translates the user's own
        name for the CUDA device class; the user's explicit "gpu" keeps meaning CUDA (on Neuron
        the user passes "neuron", which needs no translation)."""
        if not isinstance(self.parent(node), (cst.Assign, cst.AnnAssign)):
            return False
        test = next(guarding_tests(self, node), None)
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return False
        target = test.comparisons[0]
        operands = (test.left, target.comparator)
        return (
            isinstance(target.operator, cst.Equal)
            and any(string_value(operand) in _CUDA_ALIASES for operand in operands)
            and any(device_named(operand) for operand in operands)
        )

    def _comment_ties_to_cuda(self, node: cst.CSTNode) -> bool:
        """The statement's trailing comment says the value must stay CUDA (``# the simulator
        always binds to CUDA device 0``): a CUDA-only component outside the file uses it."""
        statement = self.statement_of(node)
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        comment = statement.trailing_whitespace.comment
        return comment is not None and bool(_TIED_TO_CUDA.search(comment.value))

    def _falls_back_to_tied(self, node: cst.BaseExpression) -> str | None:
        """``torch.device("cuda:1") if n > 1 else sim_device`` where ``sim_device`` is assigned,
        in the same scope, on a line whose comment ties it to CUDA: the name, else None. Porting
        one choice would split one device decision between Neuron and a kept CUDA device."""
        choice: cst.CSTNode = node
        parent = self.parent(choice)
        if isinstance(parent, cst.Arg):  # torch.device("cuda:1")
            call = self.parent(parent)
            if not (isinstance(call, cst.Call) and self.matches(call.func, "torch.device")):
                return None
            choice, parent = call, self.parent(call)
        if not isinstance(parent, cst.IfExp) or (choice is not parent.body and choice is not parent.orelse):
            return None
        other = parent.orelse if choice is parent.body else parent.body
        if not isinstance(other, cst.Name):
            return None
        scope = next((a for a in self.ancestors(parent) if isinstance(a, (cst.FunctionDef, cst.Module))), None)
        if scope is None:
            return None
        for inner in child_index(self).walk(scope):
            if (
                isinstance(inner, cst.Assign)
                and any(isinstance(t.target, cst.Name) and t.target.value == other.value for t in inner.targets)
                and self._comment_ties_to_cuda(inner.value)
            ):
                return other.value
        return None

    def _default_device_call(self, node: cst.BaseExpression) -> cst.Call | None:
        """``torch.device("cuda")`` (the string its only argument) as a parameter default, in a
        function that does not read the parameter's ``.type``/``.index`` (a string has neither)."""
        arg = self.parent(node)
        call = self.parent(arg) if isinstance(arg, cst.Arg) else None
        param = self.parent(call) if isinstance(call, cst.Call) else None
        if not (isinstance(param, cst.Param) and param.default is call and len(call.args) == 1 and arg.keyword is None):  # type: ignore[union-attr]
            return None
        if not self.matches(call.func, "torch.device"):  # type: ignore[union-attr]
            return None
        function = next((a for a in self.ancestors(param) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
        if function is None:
            return None
        name = param.name.value
        for inner in child_index(self).walk(function.body):
            if (
                isinstance(inner, cst.Attribute)
                and isinstance(inner.value, cst.Name)
                and inner.value.value == name
                and inner.attr.value in ("type", "index")
            ):
                return None
        return call  # type: ignore[return-value]

    def _in_message(self, node: cst.CSTNode) -> bool:
        """Inside a print/log/warn call or an exception message: text, not a device."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.Call):
                name = method_name(ancestor) or (ancestor.func.value if isinstance(ancestor.func, cst.Name) else "")
                if name in _MESSAGE_CALLS or name.endswith(("Error", "Exception", "Warning")):
                    return True
            if isinstance(ancestor, cst.BaseStatement):
                return False
        return False

    def _template(self, node: cst.BaseExpression) -> bool:
        """``"cuda:{}".format(i)`` / ``"cuda:%d" % i``: port the template (True if it was one)."""
        value = string_value(node)
        if value is None or not isinstance(node, cst.SimpleString) or not CUDA_TEMPLATE.match(value):
            return False
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr.value == "format":
            call = self.parent(parent)
            if not isinstance(call, cst.Call) or len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
                return True
            index = call.args[0].value
            target: cst.CSTNode = call
        elif isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Modulo) and parent.left is node:
            index = parent.right
            target = parent
            if isinstance(index, cst.Tuple):
                return True
        else:
            return True
        if self.options.style == "accelerator":
            name, imports = torch_ref(self.context.module)
            kind = retorch(ACCELERATOR_TYPE, name)

            def transform(updated: cst.CSTNode) -> cst.CSTNode:
                # Built from the updated node: the index may hold a call another rule ports
                # (``torch.cuda.current_device()``); text taken from the original would undo it.
                if isinstance(updated, cst.Call):
                    value = updated.args[0].value
                else:
                    assert isinstance(updated, cst.BinaryOperation)
                    value = updated.right
                text = cst.Module([]).code_for_node(value)
                quote = "'" if '"' in text else '"'
                return cst.parse_expression(f"f{quote}{{{kind}}}:{{{text}}}{quote}")

            self.replace(target, transform, f'device template "cuda:{{}}" -> {ACCELERATOR_TYPE}', imports=imports)
            return True
        self.replace(node, lambda n: neuron_string(cast(cst.BaseExpression, n)), 'device template "cuda:{}" -> "neuron:{}"')
        return True

    def _comparison_of(self, node: cst.CSTNode) -> cst.Comparison | None:
        parent = self.parent(node)
        if isinstance(parent, cst.ComparisonTarget):
            parent = self.parent(parent)
        return parent if isinstance(parent, cst.Comparison) else None

    def _flip_to_cpu(self, node: cst.BaseExpression, comparison: cst.Comparison) -> None:
        """Accelerator style: ``x == "cuda"`` -> ``x != "cpu"``, ``"cuda" in x`` -> ``"cpu" not in x``."""
        if len(comparison.comparisons) != 1 or type(comparison.comparisons[0].operator) not in _NEGATED:
            return
        if not isinstance(node, cst.SimpleString) or string_value(node) != "cuda":
            return
        cpu = node.with_changes(value=node.value.replace("cuda", "cpu"))
        on_left = comparison.left is node

        def transform(updated: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(updated, cst.Comparison)
            target = updated.comparisons[0]
            old = cast("cst.Equal | cst.NotEqual | cst.In | cst.NotIn", target.operator)  # the _NEGATED keys
            operator = _NEGATED[type(old)](whitespace_before=old.whitespace_before, whitespace_after=old.whitespace_after)
            if on_left:
                return updated.with_changes(left=cpu, comparisons=[target.with_changes(operator=operator)])
            return updated.with_changes(comparisons=[target.with_changes(operator=operator, comparator=cpu)])

        self.replace(comparison, transform, 'test for "cuda" -> test for "not cpu" (device-generic)')

    def _in_device_position(self, node: cst.CSTNode) -> bool:
        child: cst.CSTNode = node
        parent = self.parent(child)
        # Climb through conditional expressions and or-defaults: "cuda" if ok else "cpu", dev or "cuda".
        chosen_on_neuron = False  # the value a ported availability test now selects
        while isinstance(parent, (cst.IfExp, cst.BooleanOperation)):
            if isinstance(parent, cst.IfExp) and parent.test is child:
                return False
            if isinstance(parent, cst.IfExp) and parent.body is child and is_availability_test(self, parent.test):
                chosen_on_neuron = True
            if isinstance(parent, cst.IfExp) and self._tests_cuda_device(parent.test):
                return True  # kind = "cuda" if "cuda" in device else "cpu": the ported test picks it
            child, parent = parent, self.parent(parent)
        if isinstance(parent, cst.Arg):
            return self._device_argument(parent)
        if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)):
            # A value assigned or returned where a ported availability test picks it is a device
            # on Neuron now: ``arg = "cuda:0"`` under ``if torch.cuda.is_available():``.
            if chosen_on_neuron or under_availability_test(self, parent):
                return True
            if isinstance(parent, cst.Return):
                function = next((a for a in self.ancestors(parent) if isinstance(a, cst.FunctionDef)), None)
                return function is not None and device_named(function.name)  # def get_device(): return "cuda"
            targets = (
                [target.target for target in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            )
            return any(device_named(target) for target in targets)
        if isinstance(parent, cst.Param):
            return bool(device_named(parent.name))
        if isinstance(parent, cst.DictElement) and parent.value is child:
            key = string_value(parent.key)
            # map_location={"cuda:0": "cuda:1"}: keys name where the checkpoint was saved (kept),
            # values where to load it (ported).
            return (key is not None and bool(DEVICE_NAME.search(key))) or self._map_location_dict(parent)
        if isinstance(parent, cst.Element) and self._device_list(parent):
            return True
        if isinstance(parent, cst.Element):
            # in ("cuda", "xpu") / in {"cuda"} / in ["cuda"]: the container is the comparator.
            container = self.parent(parent)
            target = self.parent(container) if isinstance(container, (cst.Tuple, cst.Set, cst.List)) else None
            comparison = self.parent(target) if isinstance(target, cst.ComparisonTarget) else None
            return (
                isinstance(comparison, cst.Comparison)
                and isinstance(target.operator, (cst.In, cst.NotIn))  # type: ignore[union-attr]
                and self._device_comparison(comparison)
            )
        if isinstance(parent, cst.MatchValue):
            return self._device_match(parent)
        if isinstance(parent, cst.Comparison):
            return self._device_comparison(parent)
        if isinstance(parent, cst.ComparisonTarget):
            comparison = self.parent(parent)
            return isinstance(comparison, cst.Comparison) and self._device_comparison(comparison)
        return False

    def _device_match(self, pattern: cst.MatchValue) -> bool:
        """``match device: case "cuda":``: a literal pattern compared with a device-named subject."""
        node: cst.CSTNode | None = self.parent(pattern)
        while isinstance(node, (cst.MatchOrElement, cst.MatchOr, cst.MatchAs)):
            node = self.parent(node)
        match = self.parent(node) if isinstance(node, cst.MatchCase) else None
        return isinstance(match, cst.Match) and device_named(match.subject)

    def _string_method_argument(self, node: cst.CSTNode) -> bool:
        """The first argument of ``device.startswith(...)``/``.replace(...)`` on a device-named value."""
        arg = self.parent(node)
        call = self.parent(arg) if isinstance(arg, cst.Arg) else None
        return (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in _STRING_METHODS
            and positional(call, 0) is arg
            and device_named(call.func.value)
        )

    def _is_key(self, node: cst.CSTNode) -> bool:
        """A dict key (``map_location={f"cuda:{old}": ...}`` names where tensors were saved)."""
        parent = self.parent(node)
        return isinstance(parent, cst.DictElement) and parent.key is node

    def _map_location_dict(self, element: cst.DictElement) -> bool:
        mapping = self.parent(element)
        arg = self.parent(mapping) if isinstance(mapping, cst.Dict) else None
        return isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value == "map_location"

    def _device_argument(self, arg: cst.Arg) -> bool:
        call = self.parent(arg)
        if not isinstance(call, cst.Call):
            return False
        if arg.keyword is not None:
            name = arg.keyword.value
            if name in DEVICE_KEYWORDS:
                return True
            # argparse: parser.add_argument("--device", default="cuda")
            if name == "default" and method_name(call) == "add_argument":
                return any(
                    isinstance(a.value, cst.SimpleString) and "device" in str(a.value.evaluated_value)
                    for a in call.args
                    if a.keyword is None
                )
            return self._local_device_parameter(call, arg)
        if self._default_of_device_key(call, arg):
            return True
        if any(positional(call, index) is arg for index in self._device_positions(call)):
            return True  # torch.load(path, "cuda"): the callee's device parameter, by qualified name
        if self._local_device_parameter(call, arg):
            return True
        if positional(call, 0) is not arg:
            return False
        if self._string_method_argument(arg.value):
            return True
        if method_name(call) == "to" or self.matches(call.func, *_DEVICE_FIRST_ARG):
            return True
        # get_device("cuda"), resolve_device("cuda"): a callee whose name ends in "device" returns one
        # for its first argument (get_torch_device_backend does not: it returns a module, and on a
        # CPU-only torch torch.get_device_module("neuron") raises). torch.cuda's calls are NRN103's.
        name = dotted(call.func) or ""
        return bool(_DEVICE_CALLEE.search(name.split(".")[-1])) and not self.matches_prefix(call.func, "torch.cuda.")

    def _device_positions(self, call: cst.Call) -> list[int]:
        return [DEVICE_POSITIONS[name] for name in self.qualified(call.func) if name in DEVICE_POSITIONS]

    def _local_device_parameter(self, call: cst.Call, arg: cst.Arg) -> bool:
        """``make_env(env_device="cuda")`` / ``Worker(cfg, "cuda:1")`` where the function or class
        is defined in this file and the parameter the argument binds is device-named
        (``env_device``, ``storing_device``): the value is a device there, as a default of that
        parameter would be. A callee from elsewhere is not resolved (its argument keeps a marker)."""
        name = self.analysis(LocalCallees).parameter(self, call, arg)
        return name is not None and bool(DEVICE_NAME.search(name))

    def _device_list(self, element: cst.Element) -> bool:
        """An element of a list/tuple returned by a device-named function (``def benchmark_devices():
        return ["cpu", "cuda"]``) or assigned to a device-named name (``devices = ["cuda"]``)."""
        container = self.parent(element)
        holder = self.parent(container) if isinstance(container, (cst.List, cst.Tuple)) else None
        if isinstance(container, (cst.List, cst.Tuple)) and any(
            (string_value(e.value) or "").lower() in _OTHER_BACKENDS for e in container.elements
        ):
            return False  # ["cuda", "cpu", "xpu", "npu"]: a registry's backend names, not devices
        if isinstance(holder, cst.Return):
            function = next((a for a in self.ancestors(holder) if isinstance(a, cst.FunctionDef)), None)
            return function is not None and device_named(function.name)
        if isinstance(holder, cst.Assign):
            return any(device_named(target.target) for target in holder.targets)
        return False

    def _unknown_call_argument(self, node: cst.CSTNode) -> str | None:
        """The callee (as ``f()`` / ``f(name=)``) when ``node`` is an argument of a call not known to
        take a device there — directly or as an element / conditional choice (``activities=["cpu",
        "cuda"]``, ``make_agent(cfg, "cuda:1")``); None for text (print, logging, messages), string
        methods, attribute look-ups, regular expressions and torch's own calls."""
        child: cst.CSTNode = node
        parent = self.parent(node)
        while isinstance(parent, (cst.Element, cst.List, cst.Tuple, cst.IfExp)):
            if isinstance(parent, cst.IfExp) and parent.test is child:
                return None
            child, parent = parent, self.parent(parent)
        call = self.parent(parent) if isinstance(parent, cst.Arg) else None
        if not isinstance(call, cst.Call) or not isinstance(call.func, (cst.Name, cst.Attribute)):
            return None
        name = dotted(call.func) or ""
        last = name.split(".")[-1]
        if last in _TEXT_CALLS or last in _STRING_METHODS or last in ("getattr", "hasattr", "setattr", "get", "pop", "index", "count"):
            return None
        if self.matches_prefix(call.func, "torch.") or self.matches_prefix(call.func, "re.") or self._in_message(node):
            return None  # torch's own calls take a device where this rule or NRN103/201/204 port it
        if isinstance(node, cst.BaseExpression) and autocast_ports_device(self, node):
            return None
        assert isinstance(parent, cst.Arg)
        return f"{last}({parent.keyword.value}=)" if parent.keyword is not None else f"{last}()"

    def _accelerator_keyword(self, node: cst.CSTNode) -> bool:
        """``Trainer(accelerator="cuda")``: a library's accelerator name, not a torch device."""
        arg = self.parent(node)
        return isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value == "accelerator"

    def _default_of_device_key(self, call: cst.Call, arg: cst.Arg) -> bool:
        """The default of a look-up by a device-named key: ``getattr(args, "device", "cuda")``,
        ``cfg.get("device", "cuda")``, ``os.environ.get("DEVICE", "cuda")``."""
        if dotted(call.func) == "getattr":
            key, default = positional(call, 1), positional(call, 2)
        elif method_name(call) in _DEFAULT_GETTERS:
            key, default = positional(call, 0), positional(call, 1)
        else:
            return False
        name = string_value(key.value) if key is not None else None
        return default is arg and name is not None and bool(DEVICE_NAME.search(name))

    def _device_comparison(self, comparison: cst.Comparison) -> bool:
        operands = [comparison.left, *(target.comparator for target in comparison.comparisons)]
        return (
            any(device_named(operand) for operand in operands)
            and not self._parses_user_text(comparison)
            and not self._fused_beside_scaler(comparison)
        )

    def _fused_beside_scaler(self, comparison: cst.Comparison) -> bool:
        """``use_fused = device.type == "cuda"`` whose name only feeds ``fused=`` of optimizers, in
        a file where a GradScaler stays (corpus review W5b): the optimizer stays unfused (Neuron
        fuses only AdamW, and its fused step ignores the scaler's grad_scale/found_inf, facts
        §0.1), so the test keeps its CUDA meaning (False on Neuron)."""
        holder = self.parent(comparison)
        if not (isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name)):
            return False
        name = holder.targets[0].target.value
        scope = next((a for a in self.ancestors(holder) if isinstance(a, cst.FunctionDef)), self.context.module)
        uses = [
            node for node in child_index(self).walk(scope)
            if isinstance(node, cst.Name) and node.value == name and node is not holder.targets[0].target
        ]
        for use in uses:
            arg = self.parent(use)
            call = self.parent(arg) if isinstance(arg, cst.Arg) else None
            if not (
                isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value == "fused"
                and isinstance(call, cst.Call) and any(q.startswith("torch.optim.") for q in self.qualified(call.func))
            ):
                return False
        return bool(uses) and self.analysis(ScalerStays).line is not None

    def _parses_user_text(self, comparison: cst.Comparison) -> bool:
        """The function strips a ``"cuda:"`` prefix from text the port leaves as it is
        (ultralytics' ``str(device).lower().replace("cuda:", "")``, also through a loop over the
        prefixes to remove): it parses the user's CUDA
        spelling, so ``device == "cuda"`` there must keep understanding ``device="cuda"``."""
        function = next((a for a in self.ancestors(comparison) if isinstance(a, cst.FunctionDef)), None)
        if function is None:
            return False
        inner_nodes = list(child_index(self).walk(function.body))
        # ``for remove in "cuda:", "none", "(": device = device.replace(remove, "")``: the loop name
        # holds the prefix
        prefix_names = {
            loop.target.value
            for loop in inner_nodes
            if isinstance(loop, cst.For)
            and isinstance(loop.target, cst.Name)
            and isinstance(loop.iter, (cst.Tuple, cst.List))
            and any(string_value(element.value) == "cuda:" for element in loop.iter.elements)
        }
        for inner in inner_nodes:
            if (
                isinstance(inner, cst.Call)
                and isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value in {"replace", "removeprefix"}
                and (first := positional(inner, 0)) is not None
                and (
                    string_value(first.value) == "cuda:" and not self._string_method_argument(first.value)
                    or isinstance(first.value, cst.Name) and first.value.value in prefix_names
                )
            ):
                return True
        return False
