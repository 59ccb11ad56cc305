"""SARIF 2.1.0 report (``--report FILE.sarif``) for GitHub code scanning and other SARIF viewers.

One ``run`` of tool ``porter``; the driver lists the rule codes the results use (built-in and
plugins), each once, with its one-line summary, as help the text ``porter explain CODE`` prints
and a ``helpUri`` (the rule's module, whose docstring is that text); results carry only their
own message. One ``result`` per change,
per review marker and per marker an earlier run left in the output (a second run over a ported
tree adds none, but each is still to review): level ``warning`` for changes to review and
markers, ``note`` for safe changes. Paths are relative to their repository, whose root is an ``originalUriBaseIds`` entry
(``REPO1``, ``REPO2``, ...). Files that failed are ``toolExecutionNotifications`` of the
invocation (a failure is porter's problem with the file, not a finding in it).
"""

from __future__ import annotations

import json

from porter import __version__
from porter.engine.changes import Change, Safety
from porter.engine.results import Finding
from porter.reports.json_report import RunRecord
from porter.reports.markers import Marker

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/aws-neuron/porter"


def _rules() -> list[dict[str, object]]:
    # Every code porter can emit (rules, their review codes, file-type codes): the code catalogue,
    # only loaded when a SARIF is written.
    from porter.engine.registry import all_rules, catalogue

    sources = {code: cls.__module__ for cls in all_rules() for code in cls.all_codes()}
    described: list[dict[str, object]] = []
    for code, info in catalogue().items():
        level = "warning" if info.safety is Safety.REVIEW else "note"
        rule: dict[str, object] = {
            "id": code,
            "name": info.name,
            "shortDescription": {"text": info.summary},
            "help": {"text": f"{info.title}\n\n{info.doc}"},
            "defaultConfiguration": {"level": level},
            "properties": {"safety": info.safety.value},
        }
        uri = help_uri(sources.get(code, "porter.filetypes._codes"))
        if uri:
            rule["helpUri"] = uri
        described.append(rule)
    return described


def help_uri(module: str) -> str | None:
    """Where the doc of a rule in ``module`` is read online; None for a plugin's module."""
    if module.startswith("porter.rules."):
        return f"{INFORMATION_URI}/blob/main/rules/{module.removeprefix('porter.rules.').replace('.', '/')}.py"
    if module.startswith("porter."):
        return f"{INFORMATION_URI}/blob/main/{module.replace('.', '/')}.py"
    return None


def to_sarif(record: RunRecord) -> dict[str, object]:
    used = {change.code for file in record.files for change in file.changes}
    used |= {marker.code for file in record.files for marker in file.earlier_markers}
    rules = [rule for rule in _rules() if rule["id"] in used]  # compact: only the codes reported
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    bases = {repo: f"REPO{position + 1}" for position, repo in enumerate(record.repos)}
    results: list[dict[str, object]] = []
    for file in record.files:
        for change in file.changes:
            if change.code not in index:  # a code no loaded rule declares (a plugin gone since)
                index[change.code] = len(rules)
                rules.append({"id": change.code, "shortDescription": {"text": change.code}})
            results.append(_result(change, file.path, bases[file.repo], index[change.code]))
        for finding in file.findings:  # the post-port verifier's: one rule per kind
            rule_id = f"verify/{finding.kind.value}"
            if rule_id not in index:
                index[rule_id] = len(rules)
                rules.append({"id": rule_id, "shortDescription": {"text": _VERIFIER[finding.kind.value]}, "defaultConfiguration": {"level": "warning"}})
            results.append(_finding(finding, bases[file.repo], index[rule_id]))
        for marker in file.earlier_markers:  # still to review: a code scanner must list them too
            if marker.code not in index:
                index[marker.code] = len(rules)
                rules.append({"id": marker.code, "shortDescription": {"text": marker.code}})
            results.append(_earlier(marker, file.path, bases[file.repo], index[marker.code]))
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{file.path}: {file.failure}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": file.path, "uriBaseId": bases[file.repo]}}}],
            "properties": {"kind": file.failure_kind},
        }
        for file in record.files
        if file.status == "failed"
    ]
    run: dict[str, object] = {
        "tool": {
            "driver": {
                "name": "porter",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {base: _base(repo) for repo, base in bases.items()},
        "invocations": [
            {
                "executionSuccessful": not notifications,
                "commandLine": " ".join(record.command),
                "toolExecutionNotifications": notifications,
            }
        ],
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _result(change: Change, path: str, base: str, rule_index: int) -> dict[str, object]:
    level = "warning" if change.safety is Safety.REVIEW else "note"
    return {
        "ruleId": change.code,
        "ruleIndex": rule_index,
        "level": level,
        "message": {"text": f"{change.message} ({change.kind.value}, {change.safety.value})"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": path, "uriBaseId": base},
                    "region": {"startLine": max(1, change.line), "startColumn": change.column + 1},
                }
            }
        ],
        "partialFingerprints": {"porter/v1": f"{change.code}:{path}:{change.message}"},
        "properties": {"safety": change.safety.value, "kind": change.kind.value},
    }


_VERIFIER = {
    "cuda-only": "CUDA-only code left in the port, unmarked, reachable on Neuron",
    "neuron-api": "a torch.neuron call the real torch-neuronx API does not have or bind",
    "cpu-fallback": "the original fell back to the CPU without an accelerator; the port does not",
}


def _finding(finding: Finding, base: str, rule_index: int) -> dict[str, object]:
    return {
        "ruleId": f"verify/{finding.kind.value}",
        "ruleIndex": rule_index,
        "level": "warning",
        "message": {"text": finding.message + (f" ({finding.code})" if finding.code else "")},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": finding.path, "uriBaseId": base}, "region": {"startLine": max(1, finding.line)}}}],
        "partialFingerprints": {"porter/v1": f"verify/{finding.kind.value}:{finding.path}:{finding.message}"},
    }


def _earlier(marker: Marker, path: str, base: str, rule_index: int) -> dict[str, object]:
    return {
        "ruleId": marker.code,
        "ruleIndex": rule_index,
        "level": "warning",
        "message": {"text": f"{marker.message} (marker from an earlier run, review)"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": path, "uriBaseId": base}, "region": {"startLine": max(1, marker.line)}}}],
        # the fingerprint of the marker change that wrote it: a code scanner sees one alert across runs
        "partialFingerprints": {"porter/v1": f"{marker.code}:{path}:{marker.message}"},
        "properties": {"safety": "review", "kind": "marker", "earlier": True},
    }


def _base(repo: str) -> dict[str, object]:
    """A repository root by its name or remote; a URI only when the remote is a web address
    (a local absolute path says nothing to the reader of a report)."""
    if repo.startswith(("https://", "http://")):
        return {"uri": repo.removesuffix(".git").rstrip("/") + "/", "description": {"text": repo}}
    return {"description": {"text": repo}}


def render(record: RunRecord) -> str:
    return json.dumps(to_sarif(record), separators=(",", ":")) + "\n"
