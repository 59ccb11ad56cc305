"""``porter card``: record a ``porter check`` result in a Hugging Face model card.

The card (``README.md`` with YAML front matter) is read and written with huggingface_hub's
``ModelCard``/``ModelCardData``. A check result adds:

- tags: ``neuron`` plus the instance family (``trn2``/``trn3``) for a **device** report only;
  ``neuron-emulated`` for an **emulated** one. An emulated report is never written up as a device
  verification, and does not replace an existing device verification unless asked to;
- a ``neuron_verification`` mapping in the front matter (what :mod:`porter.audit.gate` reads back);
- a ``## Hardware compatibility`` section in the body.

Updating an existing card replaces that section only: the rest of the body is kept byte-for-byte and
the front matter keeps its data, but ``ModelCard`` re-serialises the YAML (key order is kept, quoting,
comments and list style are not; ``model-index`` moves to the end). A second run with the same report
gives identical bytes.

The check report (``porter check --json``) is read tolerantly: each field is looked up under several
keys (dotted paths into nested objects), the first present wins. Expected keys, by field:

=========================  ================================================================================
field                      keys tried, in order
=========================  ================================================================================
target (required)          ``target``, ``check.target``, ``environment.target``  -> ``"emulated"`` | ``"device"``
instance family            ``instance_family``, ``environment.instance_family``, ``device.instance_family``,
                           ``instance_type``, ``environment.instance_type``, ``device.instance_type``
                           (``trn2.48xlarge`` -> ``trn2``); else ``porter card --instance``
torch version              ``environment.torch``, ``versions.torch``, ``torch_version``, ``torch``
                           (default: the torch installed beside porter)
torch-neuronx version      ``environment.torch_neuronx``, ``versions.torch_neuronx``, ``environment.torch-neuronx``,
                           ``versions.torch-neuronx``, ``torch_neuronx_version``, ``torch_neuronx``
                           (device reports only, default: the torch-neuronx installed beside porter)
porter version             ``porter_version``, ``porter.version``, ``versions.porter``, ``environment.porter``
                           (default: the running porter)
date                       ``date``, ``created``, ``created_at``, ``finished_at``, ``started_at``, ``timestamp``
                           (ISO 8601 or epoch seconds; default: the report file's modification date)
graphs compiled            ``graphs_compiled``, ``summary.graphs_compiled``, ``graphs.compiled``, ``graphs.count``,
                           ``graphs`` (a list: its length; records with a ``status`` of ``unverified``
                           or ``failed`` are counted as not verified)
recompiles after warm-up   ``recompiles_after_warmup``, ``summary.recompiles_after_warmup``,
                           ``recompiles.after_warmup``, ``recompiles.count``, ``recompiles`` (list: length),
                           else the summed ``count`` of ``findings`` of ``kind`` ``recompile``
CPU fallbacks              ``cpu_fallbacks``, ``summary.cpu_fallbacks``, ``device.fallback_ops``,
                           ``fallback_ops`` (a list of op names, or a count)
host syncs per step        ``host_syncs_per_step``, ``summary.host_syncs_per_step``, ``host_syncs.per_step``,
                           else the sum of ``syncs_per_step`` (a mapping: source line -> syncs per step)
parity verdict             ``parity.verdict``, ``parity_verdict``, ``summary.parity``, ``parity`` (a string),
                           ``parity.passes[].name/verdict`` (``match``/``mismatch``/``no-verdict``),
                           ``parity.no_verdict_reason``, or ``parity.<pass>.verdict`` for each pass
overall result             ``passed`` (bool), ``ok`` (bool), ``status``/``verdict`` (``fail``, ``crash``...),
                           ``exit_code`` (int)
=========================  ================================================================================

A report whose overall result or parity verdict says it failed is refused: a card records a pass.
The shape of ``porter.check.report.CheckReport.to_dict()`` is read directly (``target``,
``exit_code``, ``verdict``, ``graphs``, ``findings``, ``syncs_per_step``, ``fallback_ops``,
``parity.passes``); it carries no versions, date or instance family yet, hence the defaults.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from porter import __version__

SECTION_TITLE = "Hardware compatibility"
METADATA_KEY = "neuron_verification"
TAG_DEVICE = "neuron"
TAG_EMULATED = "neuron-emulated"
EMULATED_TARGET = "emulated: Dynamo/AOTAutograd/StableHLO only"
EMULATED_NOTE = (
    "An upstream torch-mlir approximation of TorchNeuron's front end, run on CPU: neuronx-cc / NEFF "
    "generation and the Neuron runtime did not run. This is not a device verification."
)
MARKER = "<!-- porter card: generated from a `porter check` report; this section is replaced on update -->"

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
_FAMILY = re.compile(r"^(trn\d+|inf\d+)", re.IGNORECASE)


_FAILED_WORDS = frozenset({"fail", "failed", "failure", "error", "crash", "crashed", "timeout"})


class CardError(Exception):
    """A report or card that cannot be used; the message says why. CLI exit code 2."""


class FailedReport(CardError):
    """The check report records a failure: nothing to certify. CLI exit code 1."""


HUB_MISSING = (
    "porter card and porter gate need huggingface_hub (it ships with transformers): "
    "pip install 'porter-neuron[hf]'"
)


def model_card_class() -> Any:
    """huggingface_hub's ``ModelCard``, or a :class:`CardError` saying how to install it."""
    try:
        from huggingface_hub import ModelCard
    except ImportError as error:
        raise CardError(f"{HUB_MISSING} ({error})") from error
    return ModelCard


# --------------------------------------------------------------------------------------------------
# Reading the check report


def _lookup(data: Mapping[str, Any], *paths: str) -> Any:
    for path in paths:
        node: Any = data
        for part in path.split("."):
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            else:
                node = None
                break
        if node is not None:
            return node
    return None


def _as_count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return len(value)
    if isinstance(value, Mapping):
        for key in ("count", "total", "after_warmup"):
            if isinstance(value.get(key), int) and not isinstance(value.get(key), bool):
                return int(value[key])
    return None


def _as_date(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _dt.datetime.fromtimestamp(value, tz=_dt.timezone.utc).date().isoformat()
    if isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00")
        try:
            return _dt.datetime.fromisoformat(text).date().isoformat()
        except ValueError:
            match = re.match(r"\d{4}-\d{2}-\d{2}", text)
            return match.group(0) if match else None
    return None


def _as_version(value: Any) -> str | None:
    if isinstance(value, Mapping):
        value = value.get("version")
    return str(value).strip() if value not in (None, "") else None


def _parity(data: Mapping[str, Any]) -> str | None:
    direct = _lookup(data, "parity.verdict", "parity_verdict", "summary.parity")
    if isinstance(direct, str):
        return direct
    parity = data.get("parity")
    if isinstance(parity, str):
        return parity
    if isinstance(parity, Mapping):
        listed = parity.get("passes")
        if isinstance(listed, (list, tuple)):  # porter.check.report.Parity
            items = [
                (str(p.get("name", f"pass {i + 1}")), p["verdict"])
                for i, p in enumerate(listed)
                if isinstance(p, Mapping) and isinstance(p.get("verdict"), str)
            ]
        else:
            items = [
                (str(name), sub["verdict"])
                for name, sub in parity.items()
                if isinstance(sub, Mapping) and isinstance(sub.get("verdict"), str)
            ]
        if items:
            return ", ".join(f"{name}: {verdict}" for name, verdict in items)
        reason = parity.get("no_verdict_reason")
        if isinstance(reason, str) and reason:
            return f"no verdict ({reason})"
    return None


def _recompiles(data: Mapping[str, Any]) -> int | None:
    found = _as_count(
        _lookup(
            data,
            "recompiles_after_warmup",
            "summary.recompiles_after_warmup",
            "recompiles.after_warmup",
            "recompiles.count",
            "recompiles",
        )
    )
    if found is not None:
        return found
    findings = data.get("findings")
    if isinstance(findings, (list, tuple)):  # porter.check.report: findings of kind "recompile"
        return sum(
            int(f.get("count") or 1)
            for f in findings
            if isinstance(f, Mapping) and f.get("kind") == "recompile"
        )
    return None


def _host_syncs(data: Mapping[str, Any]) -> float | None:
    value = _lookup(data, "host_syncs_per_step", "summary.host_syncs_per_step", "host_syncs.per_step")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    per_line = data.get("syncs_per_step")  # porter.check.report: per source line, per step
    if isinstance(per_line, Mapping):
        numbers = [v for v in per_line.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return float(sum(numbers))
    return None


def _graphs(data: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(graphs compiled, graphs not verified) — the second only from a list of graph records."""
    compiled = _as_count(
        _lookup(data, "graphs_compiled", "summary.graphs_compiled", "graphs.compiled", "graphs.count", "graphs")
    )
    graphs = data.get("graphs")
    unverified = None
    if isinstance(graphs, (list, tuple)) and all(isinstance(g, Mapping) for g in graphs):
        statuses = [g.get("status") for g in graphs]
        if any(isinstance(st, str) for st in statuses):
            unverified = sum(1 for st in statuses if st in ("unverified", "failed"))
    return compiled, unverified


def installed_version(name: str) -> str | None:
    """The version of ``name`` installed beside porter (importlib.metadata), or None."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _family(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    match = _FAMILY.match(value.strip())
    return match.group(1).lower() if match else None


def _failed(data: Mapping[str, Any], parity: str | None) -> str | None:
    """Why the report counts as a failed check, or None."""
    for key in ("passed", "ok"):
        if data.get(key) is False:
            return f"the report says {key}: false"
    for key in ("status", "verdict"):
        value = data.get(key)
        if isinstance(value, str) and value.lower() in _FAILED_WORDS:
            return f"the report says {key}: {value}"
    code = data.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return f"the check exited {code}"
    if parity and re.search(r"\b(fail|failed|mismatch)\b", parity, re.IGNORECASE):
        return f"parity: {parity}"
    return None


def _instance_family(data: Mapping[str, Any], given: str | None) -> str | None:
    """The instance family from the report, or ``given``; both present must agree."""
    found = _family(
        _lookup(
            data,
            "instance_family",
            "environment.instance_family",
            "device.instance_family",
            "instance_type",
            "environment.instance_type",
            "device.instance_type",
        )
    )
    if given is None:
        return found
    wanted = _family(given)
    if wanted is None:
        raise CardError(f"{given!r} is not an instance family (e.g. trn2, trn3)")
    if found is not None and found != wanted:
        raise CardError(f"the report names instance family {found}, not {wanted}")
    return wanted


@dataclass(frozen=True)
class Verification:
    """What one ``porter check`` run verified: the fields a card and the gate need."""

    target: str  # "device" | "emulated"
    instance_family: str | None
    torch: str | None
    torch_neuronx: str | None
    porter: str
    date: str
    graphs_compiled: int | None
    graphs_unverified: int | None
    recompiles_after_warmup: int | None
    cpu_fallbacks: int | None
    cpu_fallback_ops: tuple[str, ...]
    host_syncs_per_step: float | None
    parity: str | None

    @property
    def is_device(self) -> bool:
        return self.target == "device"

    @classmethod
    def from_report(
        cls,
        data: Mapping[str, Any],
        *,
        default_date: str | None = None,
        instance: str | None = None,
        environment_versions: bool = True,
    ) -> Verification:
        """Read a ``porter check --json`` report (see the module docstring for the keys).

        ``instance`` names the instance family when the report does not (it must agree when it
        does). With ``environment_versions``, the torch / torch-neuronx versions a report lacks are
        taken from the packages installed beside porter (``porter card`` usually runs where
        ``porter check`` ran); an emulated report never takes torch-neuronx from there.
        """
        if not isinstance(data, Mapping):
            raise CardError("the check report is not a JSON object")
        if "changes" in data and "totals" in data and "target" not in data:  # what `migrate --report` writes
            raise CardError(
                "this is a `porter migrate --report` JSON; `porter card` needs the report of `porter check --json` "
                "(e.g. `porter check ported/train.py --json check.json`)"
            )
        target = _lookup(data, "target", "check.target", "environment.target")
        if not isinstance(target, str) or target.lower() not in ("emulated", "device"):
            raise CardError(
                f"the check report has no usable target (found {target!r}; expected 'emulated' or 'device')"
            )
        target = target.lower()
        family = _instance_family(data, instance)
        torch = _as_version(_lookup(data, "environment.torch", "versions.torch", "torch_version", "torch"))
        neuronx = _as_version(
            _lookup(
                data,
                "environment.torch_neuronx",
                "versions.torch_neuronx",
                "environment.torch-neuronx",
                "versions.torch-neuronx",
                "torch_neuronx_version",
                "torch_neuronx",
            )
        )
        if environment_versions:
            torch = torch or installed_version("torch")
            if target == "device":
                neuronx = neuronx or installed_version("torch-neuronx")
        if target == "device":
            if neuronx and "emul" in neuronx.lower():
                raise CardError(
                    f"the report says target 'device' but its torch-neuronx is {neuronx!r}: an emulated "
                    "run cannot be written up as a device verification"
                )
            if family is None:
                raise CardError(
                    "a device report must name the instance family (instance_family / instance_type in "
                    "the report, or --instance trn2|trn3): the card tags it"
                )
        else:
            family = None
        parity = _parity(data)
        why = _failed(data, parity)
        if why:
            raise FailedReport(f"the check did not pass ({why}); a card records a passing check")
        fallbacks = _lookup(
            data, "cpu_fallbacks", "summary.cpu_fallbacks", "device.fallback_ops", "fallback_ops"
        )
        compiled, unverified = _graphs(data)
        date = _as_date(
            _lookup(data, "date", "created", "created_at", "finished_at", "started_at", "timestamp")
        )
        return cls(
            target=target,
            instance_family=family,
            torch=torch,
            torch_neuronx=neuronx,
            porter=_as_version(
                _lookup(data, "porter_version", "porter.version", "versions.porter", "environment.porter")
            )
            or __version__,
            date=date or default_date or _dt.date.today().isoformat(),
            graphs_compiled=compiled,
            graphs_unverified=unverified,
            recompiles_after_warmup=_recompiles(data),
            cpu_fallbacks=_as_count(fallbacks),
            cpu_fallback_ops=tuple(str(op) for op in fallbacks) if isinstance(fallbacks, (list, tuple)) else (),
            host_syncs_per_step=_host_syncs(data),
            parity=parity,
        )

    @classmethod
    def from_metadata(cls, data: Mapping[str, Any]) -> Verification:
        """Read back the ``neuron_verification`` front-matter mapping a card carries."""
        if not isinstance(data, Mapping) or data.get("target") not in ("device", "emulated"):
            raise CardError(f"{METADATA_KEY} has no target 'device' or 'emulated'")
        ops = data.get("cpu_fallback_ops") or ()
        syncs = data.get("host_syncs_per_step")
        return cls(
            target=str(data["target"]),
            instance_family=_family(data.get("instance_family")),
            torch=_as_version(data.get("torch")),
            torch_neuronx=_as_version(data.get("torch_neuronx")),
            porter=str(data.get("porter") or ""),
            date=str(data.get("date") or ""),
            graphs_compiled=_as_count(data.get("graphs_compiled")),
            graphs_unverified=_as_count(data.get("graphs_unverified")),
            recompiles_after_warmup=_as_count(data.get("recompiles_after_warmup")),
            cpu_fallbacks=_as_count(data.get("cpu_fallbacks")),
            cpu_fallback_ops=tuple(str(o) for o in ops) if isinstance(ops, (list, tuple)) else (),
            host_syncs_per_step=float(syncs) if isinstance(syncs, (int, float)) else None,
            parity=str(data["parity"]) if data.get("parity") is not None else None,
        )

    def to_metadata(self) -> dict[str, Any]:
        """The front-matter mapping (None fields left out)."""
        full: dict[str, Any] = {
            "target": self.target,
            "instance_family": self.instance_family,
            "torch": self.torch,
            "torch_neuronx": self.torch_neuronx,
            "porter": self.porter,
            "date": self.date,
            "graphs_compiled": self.graphs_compiled,
            "graphs_unverified": self.graphs_unverified,
            "recompiles_after_warmup": self.recompiles_after_warmup,
            "cpu_fallbacks": self.cpu_fallbacks,
            "cpu_fallback_ops": list(self.cpu_fallback_ops) or None,
            "host_syncs_per_step": _number(self.host_syncs_per_step),
            "parity": self.parity,
        }
        return {k: v for k, v in full.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        return self.to_metadata()

    def tags(self) -> tuple[str, ...]:
        """The tags this verification earns: never ``neuron`` for an emulated run."""
        if self.is_device:
            return (TAG_DEVICE,) + ((self.instance_family,) if self.instance_family else ())
        return (TAG_EMULATED,)

    def section(self) -> str:
        """The ``## Hardware compatibility`` section (``\\n`` line endings, ends with one newline)."""
        if self.is_device:
            target = f"AWS Trainium {self.instance_family} (device run: torch-neuronx on Neuron hardware)"
        else:
            target = EMULATED_TARGET
        fallbacks = _text(self.cpu_fallbacks)
        if self.cpu_fallback_ops:
            fallbacks += f" ({', '.join(self.cpu_fallback_ops)})"
        if self.cpu_fallbacks is None and not self.is_device:
            fallbacks = "not measured (emulated: no Neuron runtime)"
        rows = [
            ("Silicon target", target),
            ("torch", _text(self.torch)),
            ("torch-neuronx", self.torch_neuronx or _NO_NEURONX[self.is_device]),
            ("porter", self.porter),
            ("Date", self.date),
            ("Graphs compiled", _text(self.graphs_compiled)),
        ]
        if self.graphs_unverified:
            why = " (known upstream torch-mlir gaps, not the script's)" if not self.is_device else ""
            rows.append(("Graphs not verified", f"{self.graphs_unverified}{why}"))
        rows += [
            ("Recompiles after warm-up", _text(self.recompiles_after_warmup)),
            ("CPU fallbacks", fallbacks),
            ("Host syncs per step", _text(_number(self.host_syncs_per_step))),
            ("Parity", _text(self.parity)),
        ]
        lines = [f"## {SECTION_TITLE}", "", MARKER, ""]
        if not self.is_device:
            lines += [f"> {EMULATED_NOTE}", ""]
        lines += ["| | |", "|---|---|"]
        lines += [f"| {name} | {_cell(value)} |" for name, value in rows]
        return "\n".join(lines) + "\n"


_NO_NEURONX = {True: "not reported", False: "not used (emulated run)"}


def _number(value: float | None) -> int | float | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else round(value, 4)


def _text(value: Any) -> str:
    return "not reported" if value is None else str(value)


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def read_report(
    path: str | os.PathLike[str], *, instance: str | None = None, environment_versions: bool = True
) -> Verification:
    """Load a ``porter check --json`` report file (see :meth:`Verification.from_report`)."""
    report = Path(path)
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        mtime = report.stat().st_mtime
    except (OSError, UnicodeDecodeError) as error:
        raise CardError(f"cannot read check report {report}: {error}") from error
    except ValueError as error:
        raise CardError(f"check report {report} is not JSON: {error}") from error
    default = _dt.datetime.fromtimestamp(mtime, tz=_dt.timezone.utc).date().isoformat()
    return Verification.from_report(
        data, default_date=default, instance=instance, environment_versions=environment_versions
    )


# --------------------------------------------------------------------------------------------------
# The card body


def find_section(body: str, title: str = SECTION_TITLE) -> tuple[int, int] | None:
    """``(start, end)`` offsets of the ``## <title>`` section in a Markdown body, or None.

    The section runs to the next heading of level 1 or 2 (outside code fences) or to the end.
    """
    start: int | None = None
    fence: str | None = None
    offset = 0
    for line in body.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        fence_match = _FENCE.match(stripped)
        if fence_match:
            marker = fence_match.group(1)
            fence = None if fence == marker else (fence or marker)
        elif fence is None:
            heading = _HEADING.match(stripped)
            if heading:
                level, text = len(heading.group(1)), heading.group(2).strip()
                if start is None and level == 2 and text.lower() == title.lower():
                    start = offset
                elif start is not None and level <= 2:
                    return start, offset
        offset += len(line)
    return (start, len(body)) if start is not None else None


def _line_ending(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def replace_section(body: str, section: str) -> str:
    """Put ``section`` in place of the existing one, or append it; all other bytes stay."""
    eol = _line_ending(body)
    section = section.replace("\n", eol)
    span = find_section(body)
    if span is None:
        if body and not body.endswith(("\n", "\r")):
            body += eol
        return body + (eol if body.strip() else "") + section
    start, end = span
    tail = body[end:]
    return body[:start] + section + (eol if tail else "") + tail


# --------------------------------------------------------------------------------------------------
# The card


@dataclass(frozen=True)
class CardResult:
    """What ``write_card`` did."""

    path: str
    created: bool
    changed: bool
    tags: tuple[str, ...]
    verification: Verification

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "created": self.created,
            "changed": self.changed,
            "tags": list(self.tags),
            "verification": self.verification.to_dict(),
        }


def _managed_tags(previous: Mapping[str, Any] | None) -> set[str]:
    managed = {TAG_DEVICE, TAG_EMULATED}
    if isinstance(previous, Mapping) and isinstance(previous.get("instance_family"), str):
        managed.add(previous["instance_family"])
    return managed


def render_card(
    existing: str | None,
    verification: Verification,
    *,
    model_name: str = "Model",
    allow_downgrade: bool = False,
) -> str:
    """The new card text for ``existing`` (None: a new card) with ``verification`` recorded."""
    card_cls = model_card_class()

    if existing is None:
        existing = f"---\ntags: []\n---\n\n# {model_name}\n"
    try:
        card = card_cls(existing)
    except Exception as error:  # yaml errors, non-mapping front matter
        raise CardError(f"cannot parse the model card's front matter: {error}") from error
    data = card.data
    previous = getattr(data, METADATA_KEY, None)
    if (
        not verification.is_device
        and isinstance(previous, Mapping)
        and previous.get("target") == "device"
        and not allow_downgrade
    ):
        raise CardError(
            f"the card records a device verification ({previous.get('instance_family')}, "
            f"{previous.get('date')}); an emulated report would replace it. Pass --allow-downgrade "
            "to do that anyway."
        )
    raw_tags = data.tags or []
    tags = [raw_tags] if isinstance(raw_tags, str) else [str(t) for t in raw_tags]
    wanted = list(verification.tags())
    stale = _managed_tags(previous) - set(wanted)
    data.tags = [t for t in tags if t not in stale] + [t for t in wanted if t not in tags]
    setattr(data, METADATA_KEY, verification.to_metadata())
    card.text = replace_section(card.text, verification.section())
    return card.content


def card_path(target: str | os.PathLike[str]) -> Path:
    """``README.md`` inside a folder, or the file itself."""
    path = Path(target)
    return path / "README.md" if path.is_dir() or not path.suffix else path


def write_card(
    target: str | os.PathLike[str],
    verification: Verification,
    *,
    allow_downgrade: bool = False,
    dry_run: bool = False,
) -> tuple[CardResult, str]:
    """Write or update the card at ``target`` (a model folder or a README path).

    Returns the result and the new card text. Writes nothing when the text is unchanged (idempotent)
    or with ``dry_run``. Line endings of an existing card are kept.
    """
    path = card_path(target)
    existing: str | None
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as handle:
            existing = handle.read()
    except FileNotFoundError:
        existing = None
    except (OSError, UnicodeDecodeError) as error:
        raise CardError(f"cannot read model card {path}: {error}") from error
    name = path.parent.resolve().name or "Model"
    text = render_card(existing, verification, model_name=name, allow_downgrade=allow_downgrade)
    changed = text != existing
    if changed and not dry_run:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        except OSError as error:
            raise CardError(f"cannot write model card {path}: {error}") from error
    return CardResult(str(path), existing is None, changed, card_tags(text), verification), text


def card_tags(text: str) -> tuple[str, ...]:
    """The tags of a card text (a helper for callers and tests)."""
    return tuple(str(t) for t in (model_card_class()(text).data.tags or ()))
