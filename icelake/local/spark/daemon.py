"""PySpark's daemon for local sessions (`spark.python.daemon.module`), with Python 3.12's cheap
`zipimporter.invalidate_caches` on Python 3.11.

Before every task a PySpark worker calls `importlib.invalidate_caches()`, and on Python 3.11 each
zip importer then reads its archive's whole directory again: pyspark.zip's 793 entries, for tasks
that take milliseconds. That re-reading was 56 % of the Python workers' CPU in the test suite (150 s
of its 2,000). Python 3.12 made the call lazy (gh-103200); here an archive is read again only when
its size or modification time has changed since it was last read, so a zip that `addPyFile`
replaces is still seen anew. The daemon records every archive's stamp before it forks, so its
workers start with them. Spark in AWS Glue runs its own daemon: nothing here reaches it.

The daemon also imports the modules icelake's tasks run (the distributed copy, the row digests)
before it forks: a worker that Spark starts after another was let go otherwise imports (and, under
PYTHONDONTWRITEBYTECODE, compiles) them again, 0.5 s of CPU each. Importing starts no thread, so
the fork stays safe.
"""

from __future__ import annotations

import importlib
import os
import zipimport
from typing import Any

STAMP_ATTR = "_icelake_stamp"
TASK_MODULES = ("icelake.migrate.copy.distributed", "icelake.migrate.check.row_digest")
_read_again = zipimport.zipimporter.invalidate_caches


def _stamp(archive: str) -> tuple[int, int] | None:
    try:
        status = os.stat(archive)
    except OSError:
        return None
    return (status.st_mtime_ns, status.st_size)


def invalidate_if_changed(importer: Any) -> None:
    """`zipimporter.invalidate_caches`, skipped while the archive is the one last read."""
    stamp = _stamp(importer.archive)
    if stamp is not None and getattr(importer, STAMP_ATTR, None) == stamp:
        return
    _read_again(importer)
    setattr(importer, STAMP_ATTR, stamp)


def install() -> None:
    zipimport.zipimporter.invalidate_caches = invalidate_if_changed  # type: ignore[method-assign,assignment]
    for name in TASK_MODULES:
        importlib.import_module(name)
    importlib.invalidate_caches()  # every archive imported so far read once, and stamped


if __name__ == "__main__":
    install()
    from pyspark.daemon import manager

    manager()  # type: ignore[no-untyped-call]  # pyspark is not typed
