"""What the module's own top-level imports bind."""

from __future__ import annotations

import libcst as cst

from porter.rules._lib.nodes import dotted


def import_binding(module: cst.Module, name: str) -> tuple[str, str | None, str | None] | None:
    """The top-level import that binds ``name``, as (module, obj, asname) for an ``ImportSpec``:
    ``import bitsandbytes as bnb`` -> ("bitsandbytes", None, "bnb"); ``from a.b import C`` ->
    ("a.b", "C", None). None when no plain top-level import binds it."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = dotted(alias.name) or ""
                    bound = alias.evaluated_alias or full.split(".")[0]
                    if bound == name:
                        return full, None, alias.evaluated_alias
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                if small.relative or small.module is None:
                    continue
                source = dotted(small.module) or ""
                for alias in small.names:
                    obj = dotted(alias.name) or ""
                    if (alias.evaluated_alias or obj) == name:
                        return source, obj, alias.evaluated_alias
    return None
