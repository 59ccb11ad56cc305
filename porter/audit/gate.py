"""``porter gate``: a CI check that a model's card records a Neuron verification.

A model is *verified for neuron* when its card carries a ``neuron`` tag (device run) or a
``neuron-emulated`` tag (emulated run) **and** a ``## Hardware compatibility`` section, as
``porter card`` writes them. The card's ``neuron_verification`` front-matter mapping, when present,
is authoritative for the target and instance family; a hand-written card without it is read from its
tags (``trn2``/``trn3`` name the family).

Sources:

- a local folder (or a README path): its ``README.md``;
- a Hub id: ``huggingface_hub.HfApi(endpoint).model_info(id)`` gives the tags, and the card's
  ``README.md`` is fetched from the same endpoint (``<endpoint>/<id>/resolve/<sha>/README.md``).
  The endpoint is ``endpoint=`` or ``$HF_ENDPOINT`` (read at call time) or huggingface.co.

Exit codes (:data:`EXIT_VERIFIED` etc.): 0 verified for the requirement; 1 not verified (the
result's ``reasons`` say what is missing); 2 error (model not found, unreadable card, hub unreachable).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from porter.audit.card import (
    HUB_MISSING,
    METADATA_KEY,
    SECTION_TITLE,
    TAG_DEVICE,
    TAG_EMULATED,
    CardError,
    Verification,
    find_section,
    model_card_class,
)

EXIT_VERIFIED = 0
EXIT_NOT_VERIFIED = 1
EXIT_ERROR = 2

INSTANCE_FAMILIES = ("trn2", "trn3")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_HINT = (
    "Record one with `porter check SCRIPT --json report.json` "
    "(add `--target device` on trn2/trn3), then `porter card report.json MODEL_DIR`."
)


class GateError(Exception):
    """The model or its card could not be read (exit code 2)."""


@dataclass(frozen=True)
class Requirement:
    """What the gate demands. ``instance`` implies a device verification."""

    target: str = "neuron"
    device: bool = False
    instance: str | None = None

    @property
    def needs_device(self) -> bool:
        return self.device or self.instance is not None

    def describe(self) -> str:
        if self.instance:
            return f"{self.target} on device {self.instance}"
        return f"{self.target} on device" if self.device else self.target


@dataclass(frozen=True)
class CardEvidence:
    """What a card says about Neuron verification, before any requirement is applied."""

    tags: tuple[str, ...]
    has_card: bool
    has_section: bool
    verification: Verification | None
    metadata_error: str | None = None


@dataclass(frozen=True)
class GateResult:
    """The gate's answer for one model."""

    model: str
    source: str  # "local" | "hub"
    requirement: Requirement
    verified: bool
    kind: str | None  # "device" | "emulated" | None: what the card verifies
    instance_family: str | None
    reasons: tuple[str, ...]
    tags: tuple[str, ...]
    verification: Verification | None

    @property
    def exit_code(self) -> int:
        return EXIT_VERIFIED if self.verified else EXIT_NOT_VERIFIED

    @property
    def message(self) -> str:
        if self.verified:
            v = self.verification
            when = f" ({v.date}, torch-neuronx {v.torch_neuronx or '?'})" if v else ""
            if self.kind == "device":
                what = f"a device run on {self.instance_family or 'an unnamed instance family'}"
            else:
                what = "an emulated run only (Dynamo/AOTAutograd/StableHLO on CPU, no device)"
            return f"{self.model}: verified for {self.requirement.describe()}: {what}{when}"
        return (
            f"{self.model}: NOT verified for {self.requirement.describe()}: "
            + "; ".join(self.reasons)
            + f". {_HINT}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "source": self.source,
            "requirement": {
                "target": self.requirement.target,
                "device": self.requirement.needs_device,
                "instance": self.requirement.instance,
            },
            "verified": self.verified,
            "kind": self.kind,
            "instance_family": self.instance_family,
            "reasons": list(self.reasons),
            "tags": list(self.tags),
            "verification": self.verification.to_dict() if self.verification else None,
            "message": self.message,
            "exit_code": self.exit_code,
        }


# --------------------------------------------------------------------------------------------------
# Reading evidence


def evidence_from_card(text: str | None, tags: Sequence[str] | None = None) -> CardEvidence:
    """Parse a card (``None``: there is none). ``tags`` override the card's own (the Hub's list)."""
    if text is None:
        return CardEvidence(tuple(tags or ()), False, False, None)
    try:
        card_cls = model_card_class()
    except CardError as error:
        raise GateError(str(error)) from error
    try:
        card = card_cls(text)
    except Exception as error:  # yaml errors, non-mapping front matter
        raise GateError(f"unreadable model card: {error}") from error
    card_tags = tuple(str(t) for t in (card.data.tags or ()))
    block = getattr(card.data, METADATA_KEY, None)
    verification = None
    problem = None
    if block is not None:
        try:
            verification = Verification.from_metadata(block)
        except CardError as error:
            problem = str(error)
    return CardEvidence(
        tags=tuple(tags) if tags is not None else card_tags,
        has_card=True,
        has_section=find_section(card.text) is not None,
        verification=verification,
        metadata_error=problem,
    )


def evaluate(model: str, source: str, evidence: CardEvidence, requirement: Requirement) -> GateResult:
    """Apply a requirement to what a card says."""
    tags = evidence.tags
    tagged_device, tagged_emulated = TAG_DEVICE in tags, TAG_EMULATED in tags
    v = evidence.verification
    reasons: list[str] = []

    kind: str | None = None
    family: str | None = None
    if v is not None:
        kind, family = v.target, v.instance_family
        if kind == "device" and not tagged_device:
            reasons.append(f"its {METADATA_KEY} says device but the `{TAG_DEVICE}` tag is missing")
            kind = None
        elif kind == "emulated" and not tagged_emulated:
            reasons.append(f"its {METADATA_KEY} says emulated but the `{TAG_EMULATED}` tag is missing")
            kind = None
    elif tagged_device:
        kind = "device"
        families = [t for t in tags if t in INSTANCE_FAMILIES or re.fullmatch(r"trn\d+", t)]
        family = families[0] if len(families) == 1 else None
    elif tagged_emulated:
        kind = "emulated"
    if evidence.metadata_error:
        reasons.append(f"unusable {METADATA_KEY}: {evidence.metadata_error}")

    if not evidence.has_card:
        reasons.append("there is no model card (README.md)")
    elif not tagged_device and not tagged_emulated:
        missing = f"no `{TAG_DEVICE}` or `{TAG_EMULATED}` tag"
        if not evidence.has_section:
            missing += f" and no '{SECTION_TITLE}' section"
        reasons.append(f"the card has {missing}")
    elif not evidence.has_section:
        reasons.append(f"the card is tagged but has no '{SECTION_TITLE}' section")

    if kind == "emulated" and tagged_device and v is not None:
        reasons.append(
            f"the card is tagged `{TAG_DEVICE}` but its verification is emulated: an emulated run is "
            "not a device verification"
        )
    if requirement.needs_device and kind == "emulated":
        reasons.append(
            "only an emulated verification (Dynamo/AOTAutograd/StableHLO on CPU, no Neuron device); "
            "a device run is required (`porter check --target device` on trn2/trn3)"
        )
    if requirement.instance and kind == "device" and family != requirement.instance:
        got = f"verified on {family}" if family else "the device verification names no instance family"
        reasons.append(f"{got}, not {requirement.instance}")

    verified = not reasons and kind is not None
    if not verified and not reasons:
        reasons.append("the card records no Neuron verification")
    return GateResult(
        model=model,
        source=source,
        requirement=requirement,
        verified=verified,
        kind=kind,
        instance_family=family if kind == "device" else None,
        reasons=tuple(reasons) if not verified else (),
        tags=tuple(tags),
        verification=v,
    )


def _read_text(path: Path) -> str | None:
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise GateError(f"cannot read model card {path}: {error}") from error


def gate_local(path: str | os.PathLike[str], requirement: Requirement) -> GateResult:
    """Gate a local model folder (or README path)."""
    target = Path(path)
    if not target.exists():
        raise GateError(f"model not found: {target} does not exist")
    readme = target / "README.md" if target.is_dir() else target
    evidence = evidence_from_card(_read_text(readme))
    return evaluate(str(path), "local", evidence, requirement)


def resolve_endpoint(endpoint: str | None) -> str | None:
    """``endpoint``, else ``$HF_ENDPOINT`` as set now, else None (huggingface_hub's default)."""
    chosen = endpoint or os.environ.get("HF_ENDPOINT") or None
    return chosen.rstrip("/") if chosen else None


def gate_hub(
    repo_id: str,
    requirement: Requirement,
    *,
    endpoint: str | None = None,
    revision: str | None = None,
    token: str | bool | None = None,
    timeout: float = 30.0,
) -> GateResult:
    """Gate a Hub model: its tags from ``model_info`` and its README.md from the same endpoint."""
    try:
        from huggingface_hub import HfApi, hf_hub_url
        from huggingface_hub.utils import (
            HfHubHTTPError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
            build_hf_headers,
            get_session,
            hf_raise_for_status,
        )
    except ImportError as error:
        raise GateError(f"{HUB_MISSING} ({error})") from error

    url = resolve_endpoint(endpoint)
    api = HfApi(endpoint=url, token=token)
    try:
        info = api.model_info(repo_id, revision=revision, timeout=timeout)
    except RepositoryNotFoundError as error:
        raise GateError(f"model not found on {api.endpoint}: {repo_id}") from error
    except RevisionNotFoundError as error:
        raise GateError(f"revision {revision!r} not found for {repo_id}") from error
    except HfHubHTTPError as error:
        raise GateError(f"hub error for {repo_id}: {str(error).splitlines()[0]}") from error
    except Exception as error:  # connection refused, offline mode, timeouts
        raise GateError(f"cannot reach {api.endpoint} for {repo_id}: {error}") from error

    readme_url = hf_hub_url(repo_id, "README.md", revision=info.sha or revision or "main", endpoint=api.endpoint)
    try:
        response = get_session().get(readme_url, headers=build_hf_headers(token=token), timeout=timeout)
        if response.status_code == 404:
            text = None
        else:
            hf_raise_for_status(response)
            text = response.content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise GateError(f"unreadable model card for {repo_id}: {error}") from error
    except Exception as error:
        raise GateError(f"cannot fetch the model card of {repo_id}: {error}") from error
    evidence = evidence_from_card(text, tags=[str(t) for t in (info.tags or ())])
    return evaluate(repo_id, "hub", evidence, requirement)


def is_local(model: str) -> bool:
    """A path that exists, or one that cannot be a Hub id (``./x``, ``/x``, ``~/x``, ``x\\y``)."""
    if Path(model).exists():
        return True
    return not _REPO_ID.match(model) or model.startswith((".", "~"))


def gate(
    model: str,
    requirement: Requirement,
    *,
    endpoint: str | None = None,
    revision: str | None = None,
) -> GateResult:
    """Gate a local folder or a Hub id (an existing path wins)."""
    if requirement.target != "neuron":
        raise GateError(f"unknown requirement {requirement.target!r} (only 'neuron')")
    if is_local(model) or _in_local_folder(model):
        return gate_local(model, requirement)
    try:
        return gate_hub(model, requirement, endpoint=endpoint, revision=revision)
    except GateError as error:
        raise GateError(f"{error} (and there is no local folder {model})") from error


def _in_local_folder(model: str) -> bool:
    """``models/bert`` where ``models/`` is a folder here: a missing local model, not a Hub id."""
    parent = Path(model).parent
    return str(parent) not in ("", ".") and parent.is_dir()
