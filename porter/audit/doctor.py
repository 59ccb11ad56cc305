"""``porter doctor``: find the environment problems that break a TorchNeuron setup before they do.

The native ``torch-neuronx`` (TorchNeuron, device ``neuron``) pins an exact PyTorch, shares its name
with the legacy XLA-based library, and is served on PyPI only as an empty placeholder. Mixed
environments fail with import errors that look like model bugs. This module inspects an environment
*without importing* torch or torch-neuronx: it reads installed distributions with
``importlib.metadata`` and reads ``torch/version.py`` as text to learn the build.

Two entry points:

- :func:`collect` snapshots the running interpreter (or any list of ``sys.path`` entries, which is
  how the tests build fake environments: a ``<name>-<version>.dist-info/METADATA`` folder is a real
  distribution to ``importlib.metadata``);
- :func:`probe` asks another interpreter (``porter doctor --python PATH``) for its version and
  ``sys.path`` with a tiny stdlib-only script, then reads that path from here.

:func:`diagnose` turns a snapshot into :class:`Finding` records, each problem with its exact fix.
Nothing here prints; every result converts to JSON with ``to_dict``.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NEURON_INDEX = "https://pip.repos.neuron.amazonaws.com"
"""The Neuron package repository: the real torch-neuronx wheels come from here, not from PyPI."""

PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's CPU-only wheel index (no nvidia-* dependencies)."""

NATIVE_FAMILIES: Mapping[tuple[int, int], str] = {(2, 13): "2.13.0", (2, 14): "2.14.0"}
"""Released native torch-neuronx families and the exact torch each pairs with."""

LATEST_FAMILY = (2, 14)
FIRST_NATIVE = (2, 10)
"""PyTorch 2.9 was the last XLA-based torch-neuronx; 2.10 and later are the native backend."""

PLACEHOLDERS: Mapping[str, frozenset[str]] = {
    "torch-neuronx": frozenset({"1.0", "1.0.0"}),
    "neuronx-cc": frozenset({"1.0.post1"}),
    "libneuronxla": frozenset({"1.0", "1.0.0"}),
}
"""Versions PyPI serves as empty name-holders; the real packages live on the Neuron repository."""

PYTHON_RANGE = ((3, 10), (3, 14))
"""Best-practices page: Python 3.10-3.14. The release notes say 3.12-3.14 (the sources disagree)."""
PYTHON_RN_RANGE = ((3, 12), (3, 14))

STATUSES = ("ok", "info", "warning", "error")

_RELEASE = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_VERSION_PY_ATTR = r"^{name}\s*(?::[^=\n]*)?=\s*(?:(['\"])(?P<value>[^'\"\n]*)\1|None)"


def normalize(name: str) -> str:
    """PEP 503 normalised distribution name (``Torch_NeuronX`` -> ``torch-neuronx``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def release(version: str) -> tuple[int, int, int] | None:
    """The numeric ``(major, minor, micro)`` prefix of a version string, or None."""
    match = _RELEASE.match(version)
    if not match:
        return None
    major, minor, micro = match.groups()
    return int(major), int(minor or 0), int(micro or 0)


def base_version(version: str) -> str:
    """The version without its local part: ``2.13.0+cpu`` -> ``2.13.0``."""
    return version.split("+", 1)[0].strip()


def local_tag(version: str) -> str:
    """The local part of a version: ``2.13.0+cu128`` -> ``cu128`` (empty when none)."""
    return version.split("+", 1)[1].strip().lower() if "+" in version else ""


@dataclass(frozen=True)
class Dist:
    """One installed distribution, as ``importlib.metadata`` sees it."""

    name: str
    version: str
    location: str
    requires: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "location": self.location}


@dataclass(frozen=True)
class TorchBuild:
    """What kind of torch build is installed, and how that was decided."""

    kind: str  # "cpu" | "cuda" | "rocm" | "other" | "unknown"
    detail: str  # e.g. "CUDA 12.8"
    evidence: str  # where the answer came from

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "detail": self.detail, "evidence": self.evidence}


@dataclass(frozen=True)
class Environment:
    """A snapshot of one Python environment: interpreter, distributions, env vars, device nodes."""

    python_version: str
    executable: str
    paths: tuple[str, ...]
    dists: Mapping[str, tuple[Dist, ...]]  # normalised name -> every install on the path, in order
    torch_version_py: Mapping[str, str | None] | None  # {"cuda": ..., "hip": ...} or None if unread
    autoload: str | None  # TORCH_DEVICE_BACKEND_AUTOLOAD as set, or None
    device_nodes: tuple[str, ...]

    def version(self, name: str) -> str | None:
        """Version of the first (importable) install of ``name``, or None."""
        found = self.dists.get(normalize(name))
        return found[0].version if found else None

    def to_dict(self) -> dict[str, Any]:
        interesting = sorted(
            n for n in self.dists if n in _INTERESTING or n.startswith("nvidia-") or "neuron" in n
        )
        return {
            "python": self.python_version,
            "executable": self.executable,
            "distributions": {n: [d.to_dict() for d in self.dists[n]] for n in interesting},
            "torch_version_py": dict(self.torch_version_py) if self.torch_version_py else None,
            "TORCH_DEVICE_BACKEND_AUTOLOAD": self.autoload,
            "device_nodes": list(self.device_nodes),
        }


_INTERESTING = {"torch", "torch-neuronx", "torch-xla", "libneuronxla", "neuronx-cc", "torchvision"}


@dataclass(frozen=True)
class Finding:
    """The result of one check: ``status`` is ok / info / warning / error; ``fix`` says what to run."""

    check: str
    status: str
    summary: str
    detail: str = ""
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "summary": self.summary,
            "detail": self.detail,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class DoctorReport:
    """Every finding for one environment. ``exit_code`` is 1 when something would break."""

    environment: Environment
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status == "warning")

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "environment": self.environment.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "exit_code": self.exit_code,
        }


# --------------------------------------------------------------------------------------------------
# Collecting a snapshot


def _read_dists(paths: Sequence[str]) -> dict[str, tuple[Dist, ...]]:
    found: dict[str, list[Dist]] = {}
    seen: set[tuple[str, str, str]] = set()
    for dist in metadata.distributions(path=list(paths)):
        raw_name = dist.metadata["Name"] if dist.metadata else None
        if not raw_name:
            continue
        location = str(dist.locate_file(""))
        key = (normalize(raw_name), dist.version, location)
        if key in seen:  # the same folder reached through two path entries
            continue
        seen.add(key)
        requires = tuple(dist.requires or ())
        found.setdefault(key[0], []).append(Dist(key[0], dist.version, location, requires))
    return {name: tuple(items) for name, items in found.items()}


def _read_torch_version_py(dists: Mapping[str, tuple[Dist, ...]]) -> dict[str, str | None] | None:
    """Read ``torch/version.py`` of the importable torch as text (never imported)."""
    torch = dists.get("torch")
    if not torch:
        return None
    path = Path(torch[0].location) / "torch" / "version.py"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    values: dict[str, str | None] = {}
    for attr in ("cuda", "hip"):
        match = re.search(_VERSION_PY_ATTR.format(name=attr), text, re.MULTILINE)
        values[attr] = match.group("value") if match else None
    return values


def _device_nodes(dev_dir: str | os.PathLike[str]) -> tuple[str, ...]:
    try:
        names = sorted(p.name for p in Path(dev_dir).iterdir() if p.name.startswith("neuron"))
    except OSError:
        return ()
    return tuple(str(Path(dev_dir) / n) for n in names)


def collect(
    paths: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    dev_dir: str | os.PathLike[str] = "/dev",
    python_version: str | None = None,
    executable: str | None = None,
) -> Environment:
    """Snapshot an environment.

    ``paths`` are the ``sys.path`` entries to search for distributions (default: this interpreter's);
    ``environ`` the environment variables (default ``os.environ``); ``dev_dir`` where device nodes
    live (default ``/dev``); ``python_version``/``executable`` describe the interpreter (default: this one).
    """
    search = [p for p in (sys.path if paths is None else paths) if p]
    env = os.environ if environ is None else environ
    dists = _read_dists(search)
    return Environment(
        python_version=python_version or ".".join(str(v) for v in sys.version_info[:3]),
        executable=executable or sys.executable,
        paths=tuple(search),
        dists=dists,
        torch_version_py=_read_torch_version_py(dists),
        autoload=env.get("TORCH_DEVICE_BACKEND_AUTOLOAD"),
        device_nodes=_device_nodes(dev_dir),
    )


PROBE = (
    "import json, platform, sys; "
    "print(json.dumps({'version': platform.python_version(), 'executable': sys.executable, "
    "'path': sys.path}))"
)
"""Run inside the interpreter given to ``--python``: stdlib only, imports nothing else."""


class ProbeError(RuntimeError):
    """The interpreter given to ``--python`` could not be run or answered nonsense."""


def probe(
    python: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    dev_dir: str | os.PathLike[str] = "/dev",
    timeout: float = 60.0,
) -> Environment:
    """Snapshot the environment of another interpreter.

    Runs :data:`PROBE` there (version, executable, ``sys.path``) and reads its distributions from
    here. Environment variables and device nodes are this process's: the interpreter would inherit them.
    """
    env = dict(os.environ if environ is None else environ)  # what a script run there would see
    try:
        done = subprocess.run(
            [os.fspath(python), "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=Path(os.fspath(python)).parent,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ProbeError(f"could not run {python}: {error}") from error
    if done.returncode != 0:
        raise ProbeError(f"{python} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        paths = [str(p) for p in answer["path"] if p]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise ProbeError(f"{python} gave an unreadable answer: {done.stdout[-300:]!r}") from error
    return collect(
        paths,
        environ=environ,
        dev_dir=dev_dir,
        python_version=str(answer.get("version", "")),
        executable=str(answer.get("executable", python)),
    )


# --------------------------------------------------------------------------------------------------
# Reading the snapshot


def torch_build(env: Environment) -> TorchBuild | None:
    """Classify the importable torch as cpu / cuda / rocm / other / unknown (None: no torch)."""
    version = env.version("torch")
    if version is None:
        return None
    vpy = env.torch_version_py
    if vpy is not None:
        if vpy.get("cuda"):
            return TorchBuild("cuda", f"CUDA {vpy['cuda']}", "torch/version.py: cuda")
        if vpy.get("hip"):
            return TorchBuild("rocm", f"ROCm/HIP {vpy['hip']}", "torch/version.py: hip")
    tag = local_tag(version)
    if tag == "cpu" or tag.startswith("cpu."):
        return TorchBuild("cpu", "CPU only", f"local version +{tag}")
    if tag.startswith("cu"):
        digits = tag[2:]
        detail = f"CUDA {digits[:-1]}.{digits[-1]}" if digits.isdigit() and len(digits) > 1 else "CUDA"
        return TorchBuild("cuda", detail, f"local version +{tag}")
    if tag.startswith("rocm"):
        return TorchBuild("rocm", f"ROCm {tag[4:]}", f"local version +{tag}")
    if tag:
        return TorchBuild("other", f"+{tag}", f"local version +{tag}")
    if vpy is not None:
        return TorchBuild("cpu", "CPU only", "torch/version.py: cuda and hip are None")
    nvidia_requires = [r for r in env.dists["torch"][0].requires if r.lower().startswith("nvidia-")]
    if nvidia_requires:
        return TorchBuild("cuda", "CUDA", "torch requires nvidia-* packages (the PyPI Linux wheel)")
    nvidia = _nvidia_dists(env)
    if nvidia:
        return TorchBuild("cuda", "CUDA (inferred)", f"nvidia-* installed: {', '.join(nvidia[:3])}")
    return TorchBuild("unknown", "unknown", "no local version tag and no readable torch/version.py")


def _nvidia_dists(env: Environment) -> list[str]:
    return sorted(n for n in env.dists if n.startswith("nvidia-") and n != "nvidia-ml-py")


def neuronx_family(version: str) -> str:
    """``placeholder`` | ``native`` | ``legacy`` | ``unknown`` for a torch-neuronx version."""
    if base_version(version) in PLACEHOLDERS["torch-neuronx"]:
        return "placeholder"
    rel = release(version)
    if rel is None:
        return "unknown"
    return "native" if rel[:2] >= FIRST_NATIVE else "legacy"


def _family_for(env: Environment) -> tuple[int, int]:
    """The native family to recommend: the one matching the installed torch, else the latest."""
    torch_version = env.version("torch")
    rel = release(torch_version) if torch_version else None
    if rel and rel[:2] in NATIVE_FAMILIES:
        return rel[:2]
    return LATEST_FAMILY


def install_command(family: tuple[int, int]) -> str:
    """The exact pins for a native family, from the Neuron repository (torch from the CPU index)."""
    minor = f"{family[0]}.{family[1]}"
    torch_pin = NATIVE_FAMILIES.get(family, f"{minor}.0")
    return (
        f'python -m pip install "torch=={torch_pin}" --index-url {PYTORCH_CPU_INDEX} && '
        f'python -m pip install "torch-neuronx=={minor}.*" "torch=={torch_pin}" '
        f"--extra-index-url {NEURON_INDEX}"
    )


# --------------------------------------------------------------------------------------------------
# The checks


def check_python(env: Environment) -> Finding:
    rel = release(env.python_version)
    lo, hi = PYTHON_RANGE
    rn_lo, rn_hi = PYTHON_RN_RANGE
    shown = env.python_version
    if rel is None:
        return Finding("python", "warning", f"Python {shown!r}: version unreadable")
    if not lo <= rel[:2] <= hi:
        return Finding(
            "python",
            "warning",
            f"Python {shown} is outside 3.10-3.14",
            "The Neuron sources support Python 3.10-3.14 (best-practices page) or 3.12-3.14 "
            "(release notes).",
            "Create the environment with Python 3.12, 3.13 or 3.14 (inside both ranges).",
        )
    if not rn_lo <= rel[:2] <= rn_hi:
        return Finding(
            "python",
            "warning",
            f"Python {shown}: inside 3.10-3.14 but not 3.12-3.14",
            "The sources disagree: the best-practices page says 3.10-3.14, the release notes say "
            "3.12-3.14.",
            "Prefer Python 3.12-3.14 for a Trainium environment (inside both ranges).",
        )
    return Finding("python", "ok", f"Python {shown}")


def check_torch(env: Environment) -> Finding:
    version = env.version("torch")
    neuronx = env.version("torch-neuronx")
    if version is None:
        if neuronx is not None and neuronx_family(neuronx) == "native":
            rel = release(neuronx)
            family = rel[:2] if rel else LATEST_FAMILY
            return Finding(
                "torch",
                "error",
                "torch is not installed but torch-neuronx is",
                "TorchNeuron is a backend of PyTorch: it cannot load without the torch it pairs with.",
                install_command(family),
            )
        return Finding(
            "torch",
            "info",
            "torch is not installed",
            "Not needed for `porter migrate`; `porter check` needs torch==2.13.0 (pip install "
            "'porter-neuron[check]').",
        )
    build = torch_build(env)
    assert build is not None
    return Finding(
        "torch", "ok", f"torch {version} ({build.detail})", f"build decided from {build.evidence}"
    )


def check_neuronx(env: Environment) -> Finding:
    version = env.version("torch-neuronx")
    family = _family_for(env)
    if version is None:
        return Finding(
            "torch-neuronx",
            "info",
            "torch-neuronx is not installed",
            "Fine for `porter migrate` and `porter check --target emulated`; a Trainium host needs "
            "the native torch-neuronx.",
            install_command(family),
        )
    kind = neuronx_family(version)
    if kind == "placeholder":
        return Finding(
            "torch-neuronx",
            "error",
            f"torch-neuronx {version} is PyPI's empty placeholder",
            "PyPI serves torch-neuronx 1.0 as a name-holder with no code; the real wheels are on the "
            "Neuron package repository.",
            f"python -m pip uninstall -y torch-neuronx && {install_command(family)}",
        )
    if kind == "legacy":
        return Finding(
            "torch-neuronx",
            "error",
            f"torch-neuronx {version} is the legacy XLA-based library (PyTorch <= 2.9 series)",
            "Same package name, different product: it provides the `xla` device, not `neuron`; "
            "ported code (`torch.device('neuron')`) fails with it. Do not mix their APIs.",
            f"python -m pip uninstall -y torch-neuronx torch-xla libneuronxla && "
            f"{install_command(family)}",
        )
    if kind == "unknown":
        return Finding("torch-neuronx", "warning", f"torch-neuronx {version}: unreadable version")
    rel = release(version)
    assert rel is not None
    if rel[:2] not in NATIVE_FAMILIES:
        known = ", ".join(f"{a}.{b}.x" for a, b in NATIVE_FAMILIES)
        return Finding(
            "torch-neuronx",
            "warning",
            f"torch-neuronx {version}: native, but not a family porter knows ({known})",
            "Pre-release or newer than porter; pairing is assumed to be torch X.Y.0.",
        )
    return Finding("torch-neuronx", "ok", f"torch-neuronx {version} (native TorchNeuron, {rel[0]}.{rel[1]}.x)")


def check_pairing(env: Environment) -> Finding:
    neuronx = env.version("torch-neuronx")
    torch = env.version("torch")
    if neuronx is None or neuronx_family(neuronx) != "native" or torch is None:
        return Finding("pairing", "ok", "nothing to pair" if neuronx is None else "not applicable")
    rel = release(neuronx)
    assert rel is not None
    wanted = NATIVE_FAMILIES.get(rel[:2], f"{rel[0]}.{rel[1]}.0")
    if base_version(torch) == wanted:
        return Finding("pairing", "ok", f"torch-neuronx {rel[0]}.{rel[1]}.x pairs with torch {wanted}")
    return Finding(
        "pairing",
        "error",
        f"torch-neuronx {neuronx} needs torch=={wanted}, found torch {torch}",
        "Each torch-neuronx family pins an exact PyTorch (2.13.x <-> 2.13.0, 2.14.x <-> 2.14.0); "
        "a mismatch fails at import with errors that look like model bugs.",
        install_command(rel[:2]),
    )


def check_torch_xla(env: Environment) -> Finding:
    xla = env.version("torch-xla")
    neuronx = env.version("torch-neuronx")
    native = neuronx is not None and neuronx_family(neuronx) == "native"
    if xla is None:
        return Finding("torch-xla", "ok", "torch-xla is not installed")
    extra = " libneuronxla" if env.version("libneuronxla") else ""
    if native:
        return Finding(
            "torch-xla",
            "error",
            f"torch-xla {xla} is installed beside the native torch-neuronx",
            "torch-xla belongs to the legacy XLA-based stack; beside TorchNeuron it registers a second "
            "backend and pins another torch ('Package version conflict').",
            f"python -m pip uninstall -y torch-xla{extra}",
        )
    return Finding(
        "torch-xla",
        "warning",
        f"torch-xla {xla} is installed",
        "Ported code targets the native `neuron` device; torch-xla is only for the legacy stack.",
        f"python -m pip uninstall -y torch-xla{extra}",
    )


def check_cuda_build(env: Environment) -> Finding:
    neuronx = env.version("torch-neuronx")
    build = torch_build(env)
    if neuronx is None or build is None or neuronx_family(neuronx) in ("placeholder", "unknown"):
        return Finding("torch-build", "ok", "not applicable (no torch-neuronx or no torch)")
    if build.kind in ("cpu",):
        return Finding("torch-build", "ok", "CPU build of torch beside torch-neuronx")
    torch_version = env.version("torch") or ""
    pin = base_version(torch_version)
    nvidia = _nvidia_dists(env)
    uninstall = f" && python -m pip uninstall -y {' '.join(nvidia)}" if nvidia else ""
    fix = (
        f'python -m pip install --force-reinstall --no-deps "torch=={pin}" '
        f"--index-url {PYTORCH_CPU_INDEX}{uninstall}"
    )
    if build.kind == "unknown":
        return Finding(
            "torch-build",
            "warning",
            "could not tell which torch build sits beside torch-neuronx",
            build.evidence,
            fix,
        )
    return Finding(
        "torch-build",
        "error",
        f"a {build.detail} build of torch ({torch_version}) is installed beside torch-neuronx",
        f"Decided from {build.evidence}. A GPU build's CUDA/ROCm libraries cannot run on Trainium "
        "and make library code take GPU branches; TorchNeuron belongs beside the stock CPU build of "
        "its torch (the Neuron docs pin the version; the CPU build is porter's recommendation).",
        fix,
    )


def check_autoload(env: Environment) -> Finding:
    value = env.autoload
    if value is None or value == "1":
        return Finding("autoload", "ok", "TORCH_DEVICE_BACKEND_AUTOLOAD is not disabled")
    neuronx = env.version("torch-neuronx")
    native = neuronx is not None and neuronx_family(neuronx) == "native"
    return Finding(
        "autoload",
        "error" if native else "warning",
        f"TORCH_DEVICE_BACKEND_AUTOLOAD={value!r} disables backend autoload",
        "PyTorch autoloads TorchNeuron only when this variable is unset or '1'; otherwise the "
        "`neuron` device is not registered unless the script itself runs `import torch_neuronx`.",
        "unset TORCH_DEVICE_BACKEND_AUTOLOAD   (or add `import torch_neuronx` at the top of the script)",
    )


def check_device_nodes(env: Environment) -> Finding:
    if env.device_nodes:
        shown = ", ".join(env.device_nodes[:4]) + (" ..." if len(env.device_nodes) > 4 else "")
        return Finding("device", "ok", f"{len(env.device_nodes)} Neuron device node(s): {shown}")
    neuronx = env.version("torch-neuronx")
    native = neuronx is not None and neuronx_family(neuronx) == "native"
    return Finding(
        "device",
        "warning" if native else "info",
        "no Neuron device nodes (/dev/neuron*)",
        "This host has no Trainium device (or the Neuron driver is not loaded): `.to('neuron')` "
        "fails with 'Neuron device not found'. Emulated checks still run here.",
        "Run on a trn2/trn3 instance with the Neuron driver loaded (check with `neuron-ls`); "
        "here use `porter check --target emulated`.",
    )


def check_placeholders(env: Environment) -> Finding:
    found = [
        f"{name} {env.version(name)}"
        for name, versions in PLACEHOLDERS.items()
        if name != "torch-neuronx" and base_version(env.version(name) or "") in versions
    ]
    if not found:
        return Finding("placeholders", "ok", "no PyPI placeholder packages")
    names = " ".join(item.split()[0] for item in found)
    return Finding(
        "placeholders",
        "error",
        f"PyPI placeholder package(s): {', '.join(found)}",
        "These versions are empty name-holders on PyPI; the real packages are on the Neuron "
        "package repository.",
        f"python -m pip uninstall -y {names} && python -m pip install {names} "
        f"--extra-index-url {NEURON_INDEX}",
    )


def check_duplicates(env: Environment) -> Finding:
    dupes = {
        name: items
        for name, items in env.dists.items()
        if name in ("torch", "torch-neuronx", "torch-xla") and len({d.version for d in items}) > 1
    }
    if not dupes:
        return Finding("duplicates", "ok", "one install of each of torch / torch-neuronx / torch-xla")
    lines = [
        f"{name}: " + ", ".join(f"{d.version} in {d.location}" for d in items)
        for name, items in sorted(dupes.items())
    ]
    return Finding(
        "duplicates",
        "error",
        "several versions of the same package on the path: " + ", ".join(sorted(dupes)),
        "Only the first is imported; the others shadow or break it ('multiple versions coexist'). "
        + "; ".join(lines),
        "Remove the stray copies (python -m pip uninstall the package until none is left, "
        "then reinstall once), and check PYTHONPATH / user site-packages.",
    )


CHECKS = (
    check_python,
    check_torch,
    check_neuronx,
    check_pairing,
    check_torch_xla,
    check_cuda_build,
    check_autoload,
    check_device_nodes,
    check_placeholders,
    check_duplicates,
)


def diagnose(env: Environment, checks: Iterable[Any] = CHECKS) -> DoctorReport:
    """Run every check on a snapshot."""
    return DoctorReport(env, tuple(check(env) for check in checks))
