"""What a rule reports: immutable, picklable records of one change each."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Safety(str, enum.Enum):
    """How much trust a change needs.

    ``safe``: the port keeps the program's meaning on Neuron; apply without reading.
    ``review``: the port is the right direction but changes behaviour a human should confirm
    (output frequency, dropped samples, a removed setting), or the code was left as it is with a
    review marker comment explaining what to do.
    """

    SAFE = "safe"
    REVIEW = "review"

    def __str__(self) -> str:
        return self.value


class Kind(str, enum.Enum):
    """``edit``: the code was rewritten. ``marker``: a ``# porter: CODE ...`` review comment was added."""

    EDIT = "edit"
    MARKER = "marker"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, order=True)
class ImportSpec:
    """An import a change needs: ``import module`` or ``from module import obj [as asname]``."""

    module: str
    obj: str | None = None
    asname: str | None = None

    def __str__(self) -> str:
        if self.obj is None:
            return f"import {self.module}" + (f" as {self.asname}" if self.asname else "")
        return f"from {self.module} import {self.obj}" + (f" as {self.asname}" if self.asname else "")


@dataclass(frozen=True)
class Change:
    """One change (or review marker) at a position of the *original* source."""

    code: str
    message: str
    path: str
    line: int
    column: int
    safety: Safety = Safety.SAFE
    kind: Kind = Kind.EDIT
    imports: tuple[ImportSpec, ...] = ()

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.column + 1}"

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "column": self.column + 1,
            "safety": self.safety.value,
            "kind": self.kind.value,
            "imports": [str(spec) for spec in self.imports],
        }
