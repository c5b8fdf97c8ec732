"""What is at the source: every file the plan carries over must exist there with the size its
metadata records, and delete files must parse; the files counted by kind (`FileTally`)."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Executor
from dataclasses import dataclass

from icelake.aws.fileio import ObjectInfo
from icelake.errors import (
    MissingSourceFilesError,
)
from icelake.migrate import metadata_json as mj
from icelake.migrate.delete_files import check_delete_file
from icelake.migrate.models import Orphans
from icelake.migrate.plan.entries import (
    recorded_live,
    recorded_size,
)
from icelake.migrate.plan.model import FileTally
from icelake.migrate.plan.reach import (
    Reach,
)
from icelake.migrate.plan.reads import (
    PlanContext,
)
from icelake.migrate.progress import Phase
from icelake.migrate.settings import EngineSettings
from icelake.uris import PrefixMap, canonical

# A local source check walks its files in worker processes (`CpuPools.for_jobs`) from this many
# files per job: 16,000 files and more, a walk of a tenth of a second and more.
LOCAL_FILES_PER_JOB = 1000


def check_sources(
    ctx: PlanContext,
    files: dict[str, int],
    delete_formats: dict[str, str],
    prefix_map: PrefixMap,
    cpu: Executor | None,
) -> dict[str, ObjectInfo | None]:
    """What exists at the source; refuses missing live files, sizes unlike the metadata's, and
    damaged delete files (parsed, not just copied: a bad footer is refused before any write)."""
    src_roots = [m.source for m in prefix_map.mappings]
    phase = Phase(ctx.progress, "check source files")
    # The files' paths are canonical (`manifest_files`, `read_manifests`).
    src_io, reads, workers = ctx.src_io, ctx.reads, ctx.workers
    src_info = reads.stat(src_io, files, src_roots, workers, phase=phase, cpu=cpu, canonical_uris=True)
    missing: list[str] = []
    wrong_size: list[str] = []
    for p, recorded in files.items():  # one pass over a million: both lists are empty when all is well
        info = src_info[p]
        if info is None:
            if recorded_live(recorded):
                missing.append(p)
        elif (size := recorded_size(recorded)) >= 0 and info.size != size:
            wrong_size.append(f"{p} (metadata says {size} bytes, found {info.size})")
    if missing or wrong_size:
        raise MissingSourceFilesError(sorted(missing), sorted(wrong_size))
    footers = [(p, fmt, info.size) for p, fmt in delete_formats.items() if (info := src_info[p])]
    reads.map(lambda f: check_delete_file(src_io, *f), footers, workers)
    return src_info


def count_files(
    files: dict[str, int],
    delete_formats: dict[str, str],
    equality: set[str],
    meta: mj.Metadata,
    src_info: dict[str, ObjectInfo | None],
) -> FileTally:
    """The files by kind; a file's bytes are what the source holds (its recorded size if absent)."""
    statistics = {canonical(path) for path, _ in mj.statistics_files(meta)}
    counts: Counter[str] = Counter()
    for path, recorded in files.items():
        info = src_info.get(path)
        size = info.size if info is not None else max(recorded_size(recorded), 0)
        if path in statistics:
            kind = "statistics"
        elif path in equality:
            kind = "equality"
        elif (fmt := delete_formats.get(path)) is not None:
            kind = "dv" if fmt.upper() == "PUFFIN" else "position"
            counts["orc"] += fmt.upper() == "ORC"
        else:
            kind = "data"
        counts[kind] += 1
        counts[kind + "_bytes"] += size
    return FileTally(
        data_files=counts["data"],
        data_bytes=counts["data_bytes"],
        position_delete_files=counts["position"],
        equality_delete_files=counts["equality"],
        deletion_vectors=counts["dv"],
        delete_bytes=counts["position_bytes"] + counts["equality_bytes"] + counts["dv_bytes"],
        statistics_files=counts["statistics"],
        statistics_bytes=counts["statistics_bytes"],
        orc_delete_files=counts["orc"],
    )


@dataclass(frozen=True)
class AtSource:
    """What the source check found: every reached file's object (None: absent), the orphans older
    versions alone reach, and the files by kind when asked (`EngineSettings.tally`)."""

    info: dict[str, ObjectInfo | None]
    orphans: Orphans
    tally: FileTally | None


def at_source(
    ctx: PlanContext, reached: Reach, meta: mj.Metadata, prefix_map: PrefixMap, settings: EngineSettings
) -> AtSource:
    """The source check of everything `reached`, and of the files only older versions reach."""
    files = reached.files
    # A local walk of many files is CPU (a stat each): in ranges, in the worker processes.
    cpu = None if ctx.src_io.listing_waits else ctx.cpus.for_jobs(len(files) // LOCAL_FILES_PER_JOB)
    src_info = check_sources(ctx, files, reached.delete_formats, prefix_map, cpu)
    counted = (
        count_files(files, reached.delete_formats, reached.equality, meta, src_info)
        if settings.tally
        else None
    )
    older = reached.older
    if settings.history == "all":
        orphans = older.orphans(src_info)
    else:  # only counted: their files are asked about here, not with the live ones
        roots = [m.source for m in prefix_map.mappings]
        asked = (
            ctx.reads.stat(ctx.src_io, older.files, roots, ctx.workers, canonical_uris=True)
            if older.files
            else {}
        )
        orphans = older.orphans(asked)
    return AtSource(src_info, orphans, counted)
