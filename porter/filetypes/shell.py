"""Launchers and containers: shell scripts, Makefiles, Slurm batch files, Procfiles, Dockerfiles.

The text is read as *logical commands* (physical lines joined by a trailing backslash); edits
touch only the matched words, and review markers go above the first line of the command, so a
continued command is never split. What is matched:

- ``python -m torch.distributed.launch`` → ``torchrun`` (NRN390; ``torch.distributed.run`` too),
  ``--use_env`` dropped; ``--nproc_per_node``/``--num_processes``/``--num_gpus`` marked (NRN391);
  Slurm GPU requests marked (NRN395);
- ``CUDA_VISIBLE_DEVICES`` (NRN191): in a file that starts a multi-process launcher (``torchrun``,
  ``torch.distributed.launch``/``run``, ``accelerate launch``, ``deepspeed``, ``mpirun``) it is dropped —
  the prefix of the launch command removed, an ``export`` line commented out — because TorchNeuron
  sets ``NEURON_RT_VISIBLE_CORES`` to each rank's local rank only when it is unset and asserts one core
  per process (torch-neuronx source, torch_neuronx/neuron.py); elsewhere (a single-process run) it is renamed to
  ``NEURON_RT_VISIBLE_CORES``, the note saying the values now pick NeuronCores; ``CUDA_LAUNCH_BLOCKING`` →
  ``NEURON_LAUNCH_BLOCKING`` (NRN192), other CUDA variables and paths marked (NRN193), ``NCCL_*``
  marked (NRN392), ``nvidia-smi`` marked (NRN196);
- ``pip install`` arguments: ``+cu121`` suffixes (NRN990), CUDA indexes (NRN993), CUDA-only
  packages (NRN994), torch without torch-neuronx (NRN992);
- Dockerfile ``FROM``/``ARG`` CUDA base images marked (NRN190).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from porter.engine.changes import Safety
from porter.filetypes import _pins
from porter.filetypes._doc import Doc

_PYTHON = r"(?:\bpython(?:3(?:\.\d+)?)?|\$\(PYTHON\)|\$\{PYTHON\}|\$PYTHON\b)"
_LAUNCH = re.compile(_PYTHON + r"(?P<flags>(?:\s+-[A-Za-z]+)*)\s+-m\s+torch\.distributed\.(?P<module>launch|run)\b")
# Dockerfile/Procfile exec form: ["python", "-m", "torch.distributed.launch", ...]
_LAUNCH_EXEC = re.compile(r'"python(?:3(?:\.\d+)?)?"\s*,\s*"-m"\s*,\s*"torch\.distributed\.(?P<module>launch|run)"')
_USE_ENV_EXEC = re.compile(r',\s*"--use[_-]env"')
_USE_ENV = re.compile(r"\s--use[_-]env\b(?:=\S+)?")
_NPROC = re.compile(r"""(?<![\w-])(--nproc[_-]per[_-]node|--num[_-]processes|--num[_-]gpus)(?:=|\s+)(\$\(\([^)]*\)\)|\$\([^)]*\)|[^\s"',]+)""")
_SLURM_GPUS = re.compile(r"^#SBATCH\s+.*?(--gres=\S*gpu\S*|--gpus(?:-per-\w+)?=\S+|-G\s*\d+)")
_VISIBLE = re.compile(r"\bCUDA_VISIBLE_DEVICES\b")
# An assignment (``CUDA_VISIBLE_DEVICES=0,1 torchrun ...`` / ``export CUDA_VISIBLE_DEVICES=0,1``).
_VISIBLE_SET = re.compile(r"(?P<export>\bexport\s+)?\bCUDA_VISIBLE_DEVICES=(?P<value>\"[^\"]*\"|'[^']*'|\S*)\s*")
# Launchers that start one process per rank: TorchNeuron then gives each rank its own core.
_MULTI_LAUNCHER = re.compile(
    r"\btorchrun\b|\btorch\.distributed\.(?:launch|run)\b|\baccelerate\s+launch\b|^\s*deepspeed\b|\bmpirun\b",
    re.MULTILINE,
)
_DROPPED_NOTE = (
    "CUDA_VISIBLE_DEVICES dropped: under a multi-process launcher TorchNeuron sets NEURON_RT_VISIBLE_CORES "
    "to each rank's local rank (one core per process); a user-set multi-core value makes every rank fail"
)
_RENAMED_NOTE = (
    "CUDA_VISIBLE_DEVICES -> NEURON_RT_VISIBLE_CORES: the values now pick NeuronCores (logical cores, "
    "trn2.48xlarge has 64), not GPUs; single-process run only"
)
_BLOCKING = re.compile(r"\bCUDA_LAUNCH_BLOCKING\b")
_NCCL = re.compile(r"\bNCCL_[A-Z0-9_]+\b")
_CUDA_ENV = re.compile(
    r"\b(PYTORCH_CUDA_ALLOC_CONF|PYTORCH_NO_CUDA_MEMORY_CACHING|CUDA_DEVICE_ORDER|CUBLAS_WORKSPACE_CONFIG"
    r"|TORCH_CUDA_ARCH_LIST|CUDA_DEVICE_MAX_CONNECTIONS|NVIDIA_VISIBLE_DEVICES|NVIDIA_DRIVER_CAPABILITIES"
    r"|TORCH_CUDNN_V8_API_ENABLED|CUDA_HOME|CUDA_PATH)\b|/usr/local/(?:cuda|nvidia)\b"
)
_MIXED_FLAG = re.compile(r"(?<![\w-])--mixed[_-]precision(?:=|\s+)(['\"]?)(fp16)\1(?![\w-])")
_FP16_FLAG = re.compile(r"(?<![\w-])--fp16(?![\w=-])")
_NVIDIA_SMI = re.compile(r"(?<![\w-])nvidia-smi\b")
_PIP_INSTALL = re.compile(r"\b(?:pip3?|python3?\s+-m\s+pip|uv\s+pip)\s+install\b")
_CONDA_INSTALL = re.compile(r"\b(?:conda|mamba|micromamba)\s+install\b")
_TOKEN = re.compile(r"""(?<![\S])(['"]?)([A-Za-z0-9][\w.-]*(?:\[[^\]]*\])?(?:[<>=!~]=?[^\s'"]*)?)\1(?!\S)""")
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(?P<image>\S+)", re.IGNORECASE)
_ARG = re.compile(r"^\s*ARG\s+\w+=(?P<image>\S+)", re.IGNORECASE)
_CUDA_IMAGE = re.compile(r"nvidia/cuda|nvcr\.io/nvidia/|cuda|cudnn|[-_:]gpu\b|-devel-gpu", re.IGNORECASE)

CORES_NOTE = "one process per NeuronCore on Trainium (trn2.48xlarge: 64 logical cores, 16 chips x 4)"
DLC_NOTE = (
    "CUDA base image: build FROM a Neuron Deep Learning Container "
    "(public.ecr.aws/neuron, pytorch-training-neuronx with torch-neuronx 2.13/2.14)"
)


@dataclass(frozen=True)
class Command:
    """A logical command: physical lines ``first``..``last`` joined by trailing backslashes."""

    first: int
    last: int


def commands(doc: Doc, dockerfile: bool = False) -> Iterator[Command]:
    index = 0
    while index < len(doc):
        if doc.is_comment(index) or not doc.body(index).strip():
            index += 1
            continue
        first = index
        while index < len(doc) - 1 and code_part(doc.body(index), dockerfile).rstrip().endswith("\\"):
            index += 1
            while index < len(doc) - 1 and doc.is_comment(index):  # Dockerfiles allow comments inside
                index += 1
        yield Command(first, index)
        index += 1


def code_part(body: str, dockerfile: bool = False) -> str:
    """The line without its trailing comment (a ``#`` outside quotes, after a blank or at the start)."""
    if dockerfile and body.lstrip().startswith("#"):
        return ""
    quote = ""
    for position, char in enumerate(body):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (position == 0 or body[position - 1] in " \t") and not dockerfile:
            return body[:position]
    return body


class ShellPort:
    """One pass over a script-like file."""

    def __init__(self, doc: Doc, kind: str) -> None:
        self.doc = doc
        self.kind = kind  # "shell" | "make" | "slurm" | "procfile" | "docker"
        self.docker = kind == "docker"
        self.neuron = bool(re.search(r"neuron", doc.text, re.IGNORECASE))
        # A launcher anywhere in the file runs what an ``export`` before it set up.
        self.multi_process = not self.docker and bool(_MULTI_LAUNCHER.search(doc.text))

    def marker_indent(self, line: int) -> str | None:
        # Make ignores comment lines between recipe lines only when they are not tab-indented.
        return "" if self.kind in ("make", "docker") else None

    def mark(self, line: int, code: str, message: str) -> None:
        self.doc.mark(line, code, message, indent=self.marker_indent(line))

    def run(self) -> None:
        if self.kind == "slurm" or "#SBATCH" in self.doc.text:
            self.slurm_directives()
        runs: dict[str, list[tuple[int, list[str]]]] = {"NRN392": [], "NRN193": []}
        for command in commands(self.doc, self.docker):
            self.command(command, runs)
        self.run_markers(runs)

    # ------------------------------------------------------------ one logical command
    def command(self, command: Command, runs: dict[str, list[tuple[int, list[str]]]]) -> None:
        doc = self.doc
        lines = range(command.first, command.last + 1)
        text = " ".join(code_part(doc.body(i), self.docker) for i in lines if not doc.is_comment(i))
        if self.docker:
            self.docker_instruction(command.first)
        launched = False
        for index in lines:
            if doc.is_comment(index):
                continue
            code = code_part(doc.body(index), self.docker)
            launched = self.launcher(index, code) or launched
            self.visible_devices(command, index, code)
            for match in _MIXED_FLAG.finditer(code):
                doc.replace_span(index, match.start(2), match.end(2), "bf16", "NRN290",
                                 "--mixed_precision fp16 -> bf16 (bf16 needs no loss scaling on Trainium)", Safety.REVIEW)
            self.rename(index, code, _BLOCKING, "NEURON_LAUNCH_BLOCKING", "NRN192", Safety.SAFE,
                        "CUDA_LAUNCH_BLOCKING -> NEURON_LAUNCH_BLOCKING: synchronous execution for debugging")
        if launched or "torchrun" in text:
            for index in lines:
                self.drop_use_env(index)
        nccl = sorted(set(_NCCL.findall(text)))
        if nccl:
            runs["NRN392"].append((command.first, nccl))
        cuda = sorted({m.group(0) for m in _CUDA_ENV.finditer(text)})
        if cuda:
            runs["NRN193"].append((command.first, cuda))
        nproc = _NPROC.search(text)
        if nproc and not self.neuron:  # a file already written for Neuron chose its count
            self.mark(command.first, "NRN391", f"{nproc.group(1)}={nproc.group(2)} counts GPUs: {CORES_NOTE}")
        if _FP16_FLAG.search(text):
            self.mark(command.first, "NRN291", "--fp16: train in bf16 on Trainium (--bf16 where the script takes it, e.g. TrainingArguments)")
        if _NVIDIA_SMI.search(text):
            self.mark(command.first, "NRN196", "nvidia-smi does not exist on Trainium: use neuron-ls / neuron-top")
        if _PIP_INSTALL.search(text):
            self.pip_install(command, text)
        elif _CONDA_INSTALL.search(text):
            names = [m.group(2) for m in _TOKEN.finditer(text)]
            bad = sorted({_base(n) for n in names if _pins.cuda_only(_base(n))} | ({"nvidia"} if "nvidia" in text.split() else set()))
            if bad:
                self.mark(command.first, "NRN994", f"CUDA-only conda packages/channels {', '.join(bad)}: drop them on Trainium")

    def launcher(self, index: int, code: str) -> bool:
        found = False
        for match in _LAUNCH_EXEC.finditer(code):
            found = True
            legacy = match.group("module") == "launch"
            self.doc.replace_span(index, match.start(), match.end(), '"torchrun"', "NRN390",
                                  "python -m torch.distributed.launch -> torchrun: ranks get LOCAL_RANK from the environment, "
                                  "not a --local_rank argument" if legacy else "python -m torch.distributed.run -> torchrun",
                                  Safety.REVIEW if legacy else Safety.SAFE)
        for match in _LAUNCH.finditer(code):
            found = True
            legacy = match.group("module") == "launch"
            dropped = f" (dropped interpreter flags{match.group('flags')})" if match.group("flags").strip() else ""
            if legacy:
                message = (
                    "python -m torch.distributed.launch -> torchrun: ranks get LOCAL_RANK from the environment, "
                    f"not a --local_rank argument{dropped}"
                )
            else:
                message = f"python -m torch.distributed.run -> torchrun (the same launcher){dropped}"
            safety = Safety.REVIEW if legacy or dropped else Safety.SAFE
            self.doc.replace_span(index, match.start(), match.end(), "torchrun", "NRN390", message, safety)
        return found

    def visible_devices(self, command: Command, index: int, code: str) -> None:
        """``CUDA_VISIBLE_DEVICES``: dropped where a multi-process launcher runs (the prefix of
        its command, or an ``export`` in a file that launches one), renamed elsewhere."""
        doc = self.doc
        if self.multi_process:
            sets = list(_VISIBLE_SET.finditer(code))
            whole = len(sets) == 1 and command.first == command.last and not code[: sets[0].start()].strip() and not code[sets[0].end() :].strip()
            if whole and sets[0].group("export"):
                # ``export CUDA_VISIBLE_DEVICES=...`` alone on its line: commented out, kept for the reader.
                if doc.edit_line(index, lambda body: "# " + body, "NRN191", _DROPPED_NOTE, Safety.REVIEW):
                    self.mark(index, "NRN191", "dropped (commented out): torchrun gives each rank its own NeuronCore")
                return
            launches = bool(_MULTI_LAUNCHER.search(" ".join(doc.body(i) for i in range(command.first, command.last + 1))))
            for match in sets:
                if match.group("export") or not launches:
                    continue  # the prefix of a single-process command: renamed below
                if doc.replace_span(index, match.start(), match.end(), "", "NRN191", _DROPPED_NOTE, Safety.REVIEW):
                    self.mark(command.first, "NRN191", f"CUDA_VISIBLE_DEVICES={match.group('value')} dropped: torchrun gives each rank its own NeuronCore")

        self.rename(index, code, _VISIBLE, "NEURON_RT_VISIBLE_CORES", "NRN191", Safety.REVIEW, _RENAMED_NOTE)

    def drop_use_env(self, index: int) -> None:
        doc = self.doc
        if doc.is_comment(index):
            return
        body = doc.body(index)
        code = code_part(body, self.docker)
        message = "--use_env dropped: torchrun always passes LOCAL_RANK in the environment"
        if re.fullmatch(r"\s*--use[_-]env(?:=\S+)?\s*\\\s*", code) and index > 0 and doc.body(index - 1).rstrip().endswith("\\"):
            doc.delete_line(index, "NRN390", message, Safety.SAFE)
            return
        for match in [*_USE_ENV.finditer(code), *_USE_ENV_EXEC.finditer(code)]:
            doc.replace_span(index, match.start(), match.end(), "", "NRN390", message, Safety.SAFE)

    def rename(self, index: int, code: str, pattern: re.Pattern[str], new: str, rule: str, safety: Safety, message: str) -> None:
        for number, match in enumerate(pattern.finditer(code)):
            self.doc.replace_span(index, match.start(), match.end(), new, rule, message if number == 0 else None, safety)

    def run_markers(self, runs: dict[str, list[tuple[int, list[str]]]]) -> None:
        """One marker per run of adjacent commands that set NCCL_* (or CUDA) variables."""
        notes = {
            "NRN392": "not read on Trainium: collectives use the neuron process group (multi-node: EFA, FI_* settings)",
            "NRN193": "CUDA-only setting, no effect on Trainium",
        }
        for code, found in runs.items():
            previous = -2
            group: list[tuple[int, list[str]]] = []
            for line, names in [*found, (-10, [])]:
                if group and (line < 0 or not self.adjacent(previous, line)):
                    first = group[0][0]
                    names_all = sorted({n for _, ns in group for n in ns})
                    shown = ", ".join(names_all[:4]) + (", ..." if len(names_all) > 4 else "")
                    self.mark(first, code, f"{shown}: {notes[code]}")
                    group = []
                if line >= 0:
                    group.append((line, names))
                    previous = line

    def adjacent(self, previous: int, line: int) -> bool:
        """Whether only comments lie between two commands (so one marker covers both)."""
        for between in range(previous + 1, line):
            if not self.doc.is_comment(between):
                return False
        return previous >= 0

    # ------------------------------------------------------------ pip install
    def pip_install(self, command: Command, text: str) -> None:
        doc = self.doc
        cuda_names: list[str] = []
        torch_req: _pins.Requirement | None = None
        for index in range(command.first, command.last + 1):
            if doc.is_comment(index):
                continue
            code = code_part(doc.body(index), self.docker)
            for match in _pins.CUDA_INDEX.finditer(code):
                doc.replace_span(index, match.start(2), match.end(2), "cpu", "NRN993",
                                 f"CUDA wheel index {match.group(2)} -> cpu: torch-neuronx runs on the CPU build of torch",
                                 Safety.REVIEW)
            for match in _TOKEN.finditer(code):
                req = _pins.parse(match.group(2))
                if req is None:
                    continue
                offset = match.start(2)
                for number, (start, end) in enumerate(req.local_cuda_spans()):
                    doc.replace_span(index, offset + start, offset + end, "", "NRN990",
                                     f"{req.name}: dropped the CUDA build suffix; the plain release pin" if number == 0 else None)
                if _pins.cuda_only(req.name):
                    cuda_names.append(req.name)
                if req.key == "torch":
                    torch_req = req
        if cuda_names:
            names = sorted(set(cuda_names))
            entry = _pins.cuda_only(names[0])
            note = entry.message if len(names) == 1 and entry else f"{', '.join(names)}: CUDA-only packages; drop them on Trainium"
            self.mark(command.first, "NRN994", note)
        if torch_req is not None and not re.search(r"torch[-_.]neuronx", doc.text, re.IGNORECASE):
            family, repin = _pins.family_for(torch_req, _pins.DEFAULT_FAMILY)
            family = family or _pins.DEFAULT_FAMILY
            also = f"torch=={_pins.FAMILIES[family]} and " if repin or torch_req.exact_version() is None and torch_req.spec.strip() else ""
            self.mark(
                command.first,
                "NRN992",
                f"install {also}{_pins.neuron_pin(family)} (--extra-index-url {_pins.NEURON_INDEX}) in a fresh environment",
            )

    # ------------------------------------------------------------ Dockerfile and Slurm
    def docker_instruction(self, index: int) -> None:
        body = self.doc.body(index)
        for pattern in (_FROM, _ARG):
            match = pattern.match(body)
            if match and _CUDA_IMAGE.search(match.group("image")) and "neuron" not in match.group("image"):
                self.mark(index, "NRN190", DLC_NOTE)

    def slurm_directives(self) -> None:
        for index in range(len(self.doc)):
            match = _SLURM_GPUS.match(self.doc.body(index))
            if match:
                self.doc.mark(index, "NRN395", f"{match.group(1)} asks Slurm for GPUs: request Trainium nodes (Neuron devices) instead")


def _base(token: str) -> str:
    return re.split(r"[\[<>=!~]", token, maxsplit=1)[0]


def port_script(doc: Doc, kind: str) -> None:
    ShellPort(doc, kind).run()
