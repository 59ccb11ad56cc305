"""``--write``: each ported file replaced in place, atomically (``textio.write_atomic``)."""

from __future__ import annotations

from porter.engine.results import Failure, FileResult, Success
from porter.engine.textio import SourceError, write_atomic
from porter.run.sinks import Item, Sink


def write_result(result: Success, path: str) -> FileResult:
    """Write ``result`` over ``path`` unless the file changed since it was read."""
    try:
        write_atomic(path, result.new, expected=result.old)
    except SourceError as error:
        return Failure(result.path, str(error), kind="write")
    return result


class InPlace(Sink):
    def accept(self, item: Item, result: FileResult, diff: str) -> FileResult:
        return write_result(result, item.path) if isinstance(result, Success) else result
