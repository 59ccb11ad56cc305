"""porter as a library: port files, trees and repositories from Python.

    from porter.api import MigrateOptions, migrate_paths

    for outcome in migrate_paths(MigrateOptions(paths=("repo",), out_dir="ported")):
        print(outcome.path, type(outcome.result).__name__)

``migrate_paths`` is a generator of ``FileOutcome`` (path, result, whether it came from the
cache, its diff), the same pipeline ``porter migrate`` drives; ``Migration`` is the prepared run
when the caller also wants the totals, the statistics or a progress hook. One-file ports without
a run: ``porter.engine.core.port_source`` / ``migrate_file``.
"""

from __future__ import annotations

from porter.run.migrate import FileOutcome, MigrateError, MigrateOptions, Migration, migrate_paths

__all__ = ["FileOutcome", "MigrateError", "MigrateOptions", "Migration", "migrate_paths"]
