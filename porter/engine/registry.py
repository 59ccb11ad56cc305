"""Finds rules: every ``Rule`` subclass in the modules of ``porter.rules``, plus third-party modules
registered under the ``porter.rules`` entry-point group. Nothing is listed by hand."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from types import ModuleType

from porter.engine.changes import Safety
from porter.engine.rule import Rule

ENTRY_POINT_GROUP = "porter.rules"


class RuleError(Exception):
    """Rules that cannot be loaded together (duplicate code, bad declaration)."""


def _modules() -> list[ModuleType]:
    import porter.rules as package

    found = [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name)
        if not info.name.startswith("_")
    ]
    for entry in _entry_points():
        try:
            loaded = entry.load()
        except Exception as error:  # a broken plugin must not take porter down
            print(f"porter: cannot load rule plugin {entry.name!r}: {error}", file=sys.stderr)
            continue
        if isinstance(loaded, ModuleType):
            found.append(loaded)
        elif inspect.isclass(loaded) and issubclass(loaded, Rule):
            found.append(sys.modules[loaded.__module__])
    return found


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule, in application order (``order``, then code)."""
    seen: dict[str, type[Rule]] = {}
    rules: list[type[Rule]] = []
    for module in _modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, Rule) or cls is Rule or cls.__module__ != module.__name__ or not cls.code:
                continue
            if cls in rules:
                continue
            for code in cls.all_codes():
                if code in seen and seen[code] is not cls:
                    raise RuleError(f"code {code} is declared by both {seen[code].__name__} and {cls.__name__}")
                seen[code] = cls
            if not (cls.name and cls.summary and cls.__doc__):
                raise RuleError(f"rule {cls.__name__} needs a name, a summary and a docstring")
            rules.append(cls)
    rules.sort(key=lambda cls: (cls.order, cls.code))
    return tuple(rules)


def rule_for_code(code: str) -> type[Rule] | None:
    wanted = code.strip().upper()
    for cls in all_rules():
        if wanted in cls.all_codes():
            return cls
    return None


@dataclass(frozen=True)
class CodeInfo:
    """Everything porter can say about one code it emits: a Python rule's code or extra code, or a
    non-Python file port's code. ``porter explain``, ``porter rules``, the reports and the commit
    messages all read codes from here (``catalogue()``)."""

    code: str
    name: str  # the rule's name; "files" for the non-Python file ports
    summary: str
    safety: Safety
    doc: str  # What it does / Why / Before / After / Safety
    rule: str  # the code of the rule that emits it (itself for a rule's main code)

    @property
    def title(self) -> str:
        return f"{self.code} ({self.name}): {self.summary}"


def catalogue() -> dict[str, CodeInfo]:
    """Every code porter can emit, sorted by code."""
    return _catalogue(all_rules())


@lru_cache(maxsize=1)
def _catalogue(rules: tuple[type[Rule], ...]) -> dict[str, CodeInfo]:
    # Keyed by the rule set, so a reloaded registry (plugins installed) never sees a stale catalogue.
    from porter.filetypes._codes import DOCS  # no libcst: file-type docs are plain data

    found: dict[str, CodeInfo] = {}
    for cls in rules:
        doc = inspect.cleandoc(cls.__doc__ or "")
        for code in cls.all_codes():
            summary = cls.summary if code == cls.code else cls.extra_codes[code]
            found[code] = CodeInfo(code, cls.name, summary, cls.code_safety(code), doc, cls.code)
    for code, file_doc in DOCS.items():
        safety = Safety.REVIEW if "review" in file_doc.summary else Safety.SAFE
        found[code] = CodeInfo(code, "files", file_doc.summary, safety, file_doc.render(code), code)
    return dict(sorted(found.items()))


def code_info(code: str) -> CodeInfo | None:
    return catalogue().get(code.strip().upper())


def code_summary(code: str) -> str:
    info = code_info(code)
    return info.summary if info is not None else ""


class SelectionError(ValueError):
    """A --select/--ignore (or [tool.porter] select/ignore) item that names no code porter emits."""


def normalize_selection(items: list[str] | tuple[str, ...], what: str = "--select") -> tuple[str, ...]:
    """Codes and code prefixes from ``items`` (codes, prefixes such as ``NRN1``, ``ALL``, or rule
    names such as ``device-strings``, which stand for every code of that rule), upper-cased.

    An item is valid when it is ``ALL``, a rule name, or a prefix of at least one catalogued code;
    anything else raises ``SelectionError`` with the closest known code or name, so one typo never
    silently switches every rule off."""
    import difflib

    known = catalogue()
    names: dict[str, tuple[str, ...]] = {}
    for info in known.values():
        if info.name != "files":
            names[info.name.lower()] = names.get(info.name.lower(), ()) + (info.code,)
    chosen: list[str] = []
    for raw in items:
        for item in (part.strip() for part in raw.split(",")):
            if not item:
                continue
            upper = item.upper()
            if upper == "ALL" or any(code.startswith(upper) for code in known):
                chosen.append(upper)
            elif item.lower() in names:
                chosen.extend(names[item.lower()])
            else:
                close = _nearest_code(upper, known) or difflib.get_close_matches(item.lower(), list(names), n=1)
                hint = f"; did you mean {close[0]}?" if close else " (see `porter rules`)"
                raise SelectionError(f"{what} {item}: no rule code, prefix or rule name matches{hint}")
    return tuple(dict.fromkeys(chosen))


def _nearest_code(item: str, known: dict[str, CodeInfo]) -> list[str]:
    """The code differing from ``item`` in the fewest places (at most 2; a typo like NRN1O1),
    lowest code first; difflib alone ties between all NRN codes and picks the last."""
    scored = sorted((sum(a != b for a, b in zip(item, code)), code) for code in known if len(code) == len(item))
    return [scored[0][1]] if scored and scored[0][0] <= 2 else []
