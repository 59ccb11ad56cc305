"""Finds rules: every ``Rule`` subclass in the modules of ``porter.rules``, plus third-party modules
registered under the ``porter.rules`` entry-point group. Nothing is listed by hand."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from functools import lru_cache
from importlib import metadata
from types import ModuleType

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


def code_summary(code: str) -> str:
    cls = rule_for_code(code)
    if cls is None:
        return ""
    return cls.summary if code == cls.code else cls.extra_codes[code]
