"""The assessment of tables before they move: what `icelake assess` and the workflow's Assess step
both run (one implementation), and the schema of assessment.json.

Per table it reads the source metadata, runs the planner a migration runs (`build_plan`, read-only:
it lists and reads, never writes), and turns what it finds into sizes, blockers, warnings, commit
rates and an estimate (icelake/assess/estimate.py). A table the planner refuses gets the refusal as
a blocker and sizes from its snapshot summaries.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from botocore.exceptions import ClientError
from pydantic import BaseModel, ConfigDict

from icelake.assess.cost import SYNC_DAYS, summed
from icelake.assess.estimate import (
    Lane,
    PlannedWork,
    TableEstimate,
    ThroughputModel,
    estimate_table,
    lay_out,
)
from icelake.assess.prices import PriceTable
from icelake.aws.fileio import FileIO, S3FileIO
from icelake.aws.request_count import RequestCount, added
from icelake.errors import IcelakeError, UnmappedPrefixesError
from icelake.migrate import metadata_json as mj
from icelake.migrate.copy import etag_verifies
from icelake.migrate.engine import migration_requests
from icelake.migrate.history import History
from icelake.migrate.journal import new_target_keys
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.model import FileTally, TablePlan
from icelake.migrate.plan.reads import read_metadata
from icelake.migrate.plan.target import table_prefix_map
from icelake.migrate.progress import NoProgress, ProgressSink
from icelake.migrate.prune import prune_requests
from icelake.migrate.settings import EngineSettings
from icelake.migrate.table_size import estimate_size
from icelake.migrate.validate import files_check_requests
from icelake.uris import PrefixMap, canonical, is_under, parent

SCHEMA_VERSION = 1
# Storage classes CopyObject cannot read until the object is restored (RestoreObject).
ARCHIVED = ("GLACIER", "DEEP_ARCHIVE")
SHOWN = 20  # objects named in a finding; the count says how many there are


class Finding(BaseModel):
    """A blocker (what would fail) or a warning (what would work worse than expected)."""

    model_config = ConfigDict(frozen=True)
    kind: str
    message: str
    objects: list[str] = []  # the first SHOWN objects it is about
    count: int = 0  # how many objects in all


class PrefixUse(BaseModel):
    model_config = ConfigDict(frozen=True)
    prefix: str
    files: int
    mapped: bool
    target: str | None = None


class DeleteFiles(BaseModel):
    model_config = ConfigDict(frozen=True)
    position: int = 0
    equality: int = 0
    deletion_vectors: int = 0


class TableAssessment(BaseModel):
    """One table: counts over every retained snapshot (what a migration copies)."""

    model_config = ConfigDict(frozen=True)
    table: str
    source_metadata_location: str
    target_location: str
    planned: bool  # False: the planner refused the table (see blockers); sizes from its summaries
    format_version: int | None = None
    snapshots: int = 0
    refs: int = 0
    data_files: int = 0
    data_bytes: int = 0
    delete_files: DeleteFiles = DeleteFiles()
    delete_bytes: int = 0
    metadata_files: int = 0  # metadata.json files, manifest lists and manifests
    metadata_bytes: int = 0
    statistics_files: int = 0
    files_to_copy: int = 0  # not yet at the target
    bytes_to_copy: int = 0
    prefixes: list[PrefixUse] = []
    commits_per_day: dict[str, float] = {}  # "7d", "30d"
    bytes_added_per_day: dict[str, float] = {}
    daily_commits: list[int] = []  # the last 30 days, oldest first
    engine: Literal["lambda", "glue"] = "lambda"
    blockers: list[Finding] = []
    warnings: list[Finding] = []
    estimate: TableEstimate | None = None


class RunEstimate(BaseModel):
    """The tables laid out on the Map's lanes."""

    model_config = ConfigDict(frozen=True)
    concurrency: int
    duration_s: float
    lanes: list[Lane]


class Totals(BaseModel):
    model_config = ConfigDict(frozen=True)
    tables: int = 0
    blocked_tables: int = 0
    data_files: int = 0
    data_bytes: int = 0
    delete_files: int = 0
    delete_bytes: int = 0
    metadata_files: int = 0
    metadata_bytes: int = 0
    statistics_files: int = 0
    files_to_copy: int = 0
    bytes_to_copy: int = 0
    blockers: int = 0
    warnings: int = 0
    requests: dict[str, int] = {}
    cost_usd: dict[str, float] = {}


class Assessment(BaseModel):
    """assessment.json (docs/assessment.md describes every field)."""

    model_config = ConfigDict(frozen=True)
    schema_version: int = SCHEMA_VERSION
    generated_at: str
    scope: dict[str, Any]  # what was assessed: the request's selection, or the one table
    tables: list[TableAssessment]
    totals: Totals
    run: RunEstimate
    model: dict[str, Any]  # the throughput model and the price table used


@dataclass(frozen=True)
class Settings:
    """How the tables are assessed: the request's thresholds and concurrency, the sync window, the
    prices and the throughput model."""

    prices: PriceTable
    model: ThroughputModel = field(default_factory=ThroughputModel)
    glue_threshold_files: int = 20_000
    glue_threshold_bytes: int = 100 * 1024**3
    concurrency: int = 4
    prune: bool = True  # the request's options.prune: Validate then reads the target's manifests again
    history: History = "live"  # the request's options.history: what the target keeps
    sync_days: float = SYNC_DAYS
    cross_region: bool = False
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass
class _Objects:
    """What the plan's listings and HEADs said of the source objects that matter: archived ones and
    ones without a full-object checksum (thread-safe: listings run side by side)."""

    archived: dict[str, str] = field(default_factory=dict)
    unchecksummed: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, uri: str, storage_class: str, checksummed: bool) -> None:
        if storage_class in ARCHIVED or not checksummed:
            with self.lock:
                if storage_class in ARCHIVED:
                    self.archived[uri] = storage_class
                if not checksummed:
                    self.unchecksummed.add(uri)


def assess_table(
    name: str,
    source_metadata: str,
    target_location: str,
    maps: Sequence[tuple[str, str]],
    src_io: FileIO,
    dst_io: FileIO,
    settings: Settings,
    *,
    findings: Iterable[Finding] = (),
    progress: ProgressSink | None = None,
) -> TableAssessment:
    """Assess one table as a migration would move it. `findings`: blockers found by the caller
    (the target catalog and ledger: a diverged, busy or foreign target). Reads only."""
    counted = RequestCount()
    objects = _Objects()
    for io in (src_io, dst_io):
        if isinstance(io, S3FileIO):
            counted.attach_io(io)
    if isinstance(src_io, S3FileIO):
        src_io.observe = objects
    blockers = list(findings)
    warnings: list[Finding] = []
    try:
        source = read_metadata(src_io, source_metadata)
    except (IcelakeError, ClientError) as exc:
        blockers.append(_refusal(exc))
        return TableAssessment(
            table=name,
            source_metadata_location=source_metadata,
            target_location=target_location,
            planned=False,
            blockers=blockers,
        )
    meta = source[0]
    history = _history(meta, settings.now)
    plan, prefixes = _plan(
        source_metadata, target_location, maps, src_io, dst_io, source, blockers, progress, settings.history
    )
    replanned = counted.counts()  # what the Copy step's own plan sends again
    if plan is not None:
        # What the Plan step asks besides the plan: which keys the run creates (its journal).
        new_target_keys(plan, dst_io)
    plan_requests = counted.counts()
    if plan is None:
        return _unplanned(name, source_metadata, target_location, meta, history, prefixes, blockers, settings)
    tally = plan.tally or FileTally()
    if tally.orc_delete_files:
        blockers.append(
            Finding(
                kind="orc_delete_files",
                message=f"{tally.orc_delete_files} position delete file(s) are ORC, which icelake cannot "
                "rewrite: rewrite them as Parquet (Spark's rewrite_position_delete_files) first",
                count=tally.orc_delete_files,
            )
        )
    _object_findings(plan, objects, blockers, warnings)
    files_to_copy = len(plan.copies)
    bytes_to_copy = sum(task.info.size for task in plan.copies)
    engine = _engine(meta, files_to_copy, bytes_to_copy, settings)
    metadata_paths = [*plan.metadata_files, *plan.manifest_lists, *plan.manifests]
    metadata_bytes = _metadata_bytes(src_io, plan, metadata_paths)
    target_kms = bool(getattr(dst_io, "kms_key_id", None))
    expected = expected_requests(
        plan, target_location, replanned, prune=settings.prune, target_kms=target_kms
    )
    work = PlannedWork(
        plan_requests=plan_requests,
        run_requests=expected["copy"],
        validate_requests=expected["validate"],
        bytes_to_copy=bytes_to_copy,
        files_to_copy=files_to_copy,
        engine=engine,
    )
    estimate = estimate_table(
        work,
        settings.model,
        settings.prices,
        cross_region=settings.cross_region,
        stored_bytes=plan.bytes_planned,
        sync_days=settings.sync_days,
    )
    rate_warning = _commit_rate_warning(history, estimate.duration_s, settings.sync_days)
    if rate_warning:
        warnings.append(rate_warning)
    return TableAssessment(
        **_identity(name, source_metadata, target_location, meta),
        planned=True,
        data_files=tally.data_files,
        data_bytes=tally.data_bytes,
        delete_files=DeleteFiles(
            position=tally.position_delete_files,
            equality=tally.equality_delete_files,
            deletion_vectors=tally.deletion_vectors,
        ),
        delete_bytes=tally.delete_bytes,
        metadata_files=len(metadata_paths),
        metadata_bytes=metadata_bytes,
        statistics_files=tally.statistics_files,
        files_to_copy=files_to_copy,
        bytes_to_copy=bytes_to_copy,
        prefixes=[
            PrefixUse(
                prefix=m.source, files=plan.prefix_counts.get(m.source, 0), mapped=True, target=m.target
            )
            for m in plan.prefix_map.mappings
        ],
        engine=engine,
        blockers=blockers,
        warnings=warnings,
        estimate=estimate,
        **history.fields(),
    )


def _plan(
    source_metadata: str,
    target_location: str,
    maps: Sequence[tuple[str, str]],
    src_io: FileIO,
    dst_io: FileIO,
    source: tuple[mj.Metadata, bool],
    blockers: list[Finding],
    progress: ProgressSink | None,
    history: History,
) -> tuple[TablePlan | None, list[PrefixUse]]:
    """The plan a migration makes (None when it refuses: the refusal joins `blockers`), and the
    unmapped prefixes a refusal named."""
    try:
        plan = build_plan(
            source_metadata,
            target_location,
            maps,
            src_io,
            dst_io,
            settings=EngineSettings(
                overwrite=False, workers=16, progress=progress or NoProgress(), history=history, tally=True
            ),
            source=source,
        )
    except UnmappedPrefixesError as exc:
        blockers.append(_refusal(exc))
        return None, [PrefixUse(prefix=p, files=n, mapped=False) for p, n in sorted(exc.prefixes.items())]
    except (IcelakeError, ClientError) as exc:
        blockers.append(_refusal(exc))
        return None, []
    return plan, []


def assemble(tables: list[TableAssessment], settings: Settings, scope: dict[str, Any]) -> Assessment:
    """The assessment of a run: the tables, their totals, and their layout on the Map's lanes."""
    estimates = [t.estimate for t in tables if t.estimate is not None]
    lanes = lay_out({t.table: t.estimate.duration_s for t in tables if t.estimate}, settings.concurrency)
    duration = max((lane.end_s for lane in lanes), default=0.0) + settings.model.map_overhead_s
    totals = Totals(
        tables=len(tables),
        blocked_tables=sum(bool(t.blockers) for t in tables),
        data_files=sum(t.data_files for t in tables),
        data_bytes=sum(t.data_bytes for t in tables),
        delete_files=sum(
            t.delete_files.position + t.delete_files.equality + t.delete_files.deletion_vectors
            for t in tables
        ),
        delete_bytes=sum(t.delete_bytes for t in tables),
        metadata_files=sum(t.metadata_files for t in tables),
        metadata_bytes=sum(t.metadata_bytes for t in tables),
        statistics_files=sum(t.statistics_files for t in tables),
        files_to_copy=sum(t.files_to_copy for t in tables),
        bytes_to_copy=sum(t.bytes_to_copy for t in tables),
        blockers=sum(len(t.blockers) for t in tables),
        warnings=sum(len(t.warnings) for t in tables),
        requests=added(*(e.requests for e in estimates)),
        cost_usd=summed([e.cost_usd for e in estimates]),
    )
    prices = settings.prices
    return Assessment(
        generated_at=settings.now.isoformat(timespec="seconds"),
        scope=scope,
        tables=tables,
        totals=totals,
        run=RunEstimate(concurrency=settings.concurrency, duration_s=round(duration, 3), lanes=lanes),
        model={
            "throughput": settings.model.model_dump(),
            "sync_days": settings.sync_days,
            "cross_region": settings.cross_region,
            "glue_threshold_files": settings.glue_threshold_files,
            "glue_threshold_bytes": settings.glue_threshold_bytes,
            "prices": prices.model_dump(mode="json"),
        },
    )


@dataclass(frozen=True)
class _History:
    """Commit rates from the snapshots' timestamps and summaries."""

    per_day_7: float
    per_day_30: float
    bytes_7: float
    bytes_30: float
    daily: list[int]

    def fields(self) -> dict[str, Any]:
        return {
            "commits_per_day": {"7d": self.per_day_7, "30d": self.per_day_30},
            "bytes_added_per_day": {"7d": self.bytes_7, "30d": self.bytes_30},
            "daily_commits": self.daily,
        }


def _history(meta: mj.Metadata, now: datetime) -> _History:
    daily = [0] * 30
    commits = {7: 0, 30: 0}
    added_bytes = {7: 0, 30: 0}
    for snapshot in meta.get("snapshots") or []:
        when = datetime.fromtimestamp(int(snapshot.get("timestamp-ms", 0)) / 1000, UTC)
        age = now - when
        if age < timedelta(0) or age >= timedelta(days=30):
            continue
        daily[29 - age.days] += 1
        size = _summary_int(snapshot, "added-files-size")
        for days in (7, 30):
            if age < timedelta(days=days):
                commits[days] += 1
                added_bytes[days] += size
    return _History(
        per_day_7=round(commits[7] / 7, 3),
        per_day_30=round(commits[30] / 30, 3),
        bytes_7=round(added_bytes[7] / 7, 1),
        bytes_30=round(added_bytes[30] / 30, 1),
        daily=daily,
    )


def _summary_int(snapshot: dict[str, Any], key: str) -> int:
    try:
        return int((snapshot.get("summary") or {}).get(key, 0))
    except (TypeError, ValueError):
        return 0


def _commit_rate_warning(history: _History, duration_s: float, sync_days: float) -> Finding | None:
    """A table that keeps committing between its copy and the cutover needs incremental syncs
    (each copies only what was added) until writers stop: at least one commit expected in the
    sync window."""
    rate = max(history.per_day_7, history.per_day_30)
    window = rate * sync_days
    if window < 1:
        return None
    during = rate * duration_s / 86_400
    return Finding(
        kind="commit_rate",
        message=f"the table commits {history.per_day_7:g} times a day (last 7 days; {history.per_day_30:g} "
        f"over 30): about {window:,.0f} commit(s) in a {sync_days:g}-day sync window, {during:.2g} during "
        "its estimated copy; plan incremental syncs (mode incremental, or the scheduled sync) until "
        "writers stop, then icelake migrate cutover",
    )


def _engine(meta: mj.Metadata, files: int, size: int, settings: Settings) -> Literal["lambda", "glue"]:
    """As Plan chooses: a table over a threshold by its summaries, or by what it copies, goes to Glue."""
    summaries = estimate_size(meta)
    over = files > settings.glue_threshold_files or size > settings.glue_threshold_bytes
    if summaries is not None:
        over = over or (
            summaries.files > settings.glue_threshold_files or summaries.bytes > settings.glue_threshold_bytes
        )
    return "glue" if over else "lambda"


def _object_findings(
    plan: TablePlan, objects: _Objects, blockers: list[Finding], warnings: list[Finding]
) -> None:
    """Blockers for archived objects the migration must read, warnings for copies that neither a
    checksum nor MD5 ETags can verify (`copy.etag_verifies`)."""
    etags = {task.source: task.info.etag for task in plan.copies}
    copied = etags.keys()
    read = copied | {t.source for t in plan.delete_files} | set(plan.manifests) | set(plan.manifest_lists)
    read |= {canonical(p) for p in plan.metadata_files}
    archived = sorted(uri for uri in objects.archived if uri in read)
    if archived:
        shown = [f"{uri} ({objects.archived[uri]})" for uri in archived[:SHOWN]]
        blockers.append(
            Finding(
                kind="archived_objects",
                message=f"{len(archived)} source object(s) are in GLACIER or DEEP_ARCHIVE, which CopyObject "
                f"cannot read without a restore: {_few(shown)}; "
                "restore them (S3 RestoreObject, for at least the migration's length) before migrating",
                objects=shown,
                count=len(archived),
            )
        )
    unchecked = sorted(uri for uri in objects.unchecksummed if uri in etags and not etag_verifies(etags[uri]))
    if unchecked:
        warnings.append(
            Finding(
                kind="no_checksum",
                message=f"{len(unchecked)} source object(s) were uploaded in parts and have no "
                f"full-object checksum, so their copies are verified by size only: {_few(unchecked)}",
                objects=unchecked[:SHOWN],
                count=len(unchecked),
            )
        )


def _metadata_bytes(src_io: FileIO, plan: TablePlan, paths: list[str]) -> int:
    """The metadata files' bytes: manifests' from the lists (manifest_length), the others from a
    listing of the directories that hold them (one page for most tables)."""
    sizes: dict[str, int] = {p: ref.length for p, ref in plan.manifests.items() if ref.length >= 0}
    wanted = {canonical(p) for p in paths} - sizes.keys()
    for directory in sorted({parent(p) for p in wanted}):
        try:
            sizes.update((canonical(uri), info.size) for uri, info in src_io.list(directory))
        except Exception:  # a size this listing cannot give is left out, not guessed
            continue
    return sum(sizes.get(canonical(p), 0) for p in paths)


def expected_requests(
    plan: TablePlan,
    target_location: str,
    replanned: Mapping[str, int],
    *,
    prune: bool,
    target_kms: bool = False,
) -> dict[str, dict[str, int]]:
    """What the copy (its own plan, `replanned`: what planning sent, then its writes) and Validate
    (its file check, then the prune that follows a validated sync when `prune`) will send."""
    validate = _validate_requests(plan, target_location)
    if prune:
        validate = added(validate, prune_requests(len(plan.manifest_lists), len(plan.manifests)))
    copy = migration_requests(plan, target_kms=target_kms)
    return {"copy": added(replanned, copy), "validate": validate}


def _validate_requests(plan: TablePlan, target_location: str) -> dict[str, int]:
    """Validate's file check of the target (its requests; pyiceberg's reads are not counted)."""
    at_location = sum(
        n for source, n in plan.prefix_counts.items() if _maps_into(plan.prefix_map, source, target_location)
    )
    files = plan.files_planned
    return files_check_requests(
        objects_at_location=max(at_location, files),
        lists=len(plan.manifest_lists),
        manifests=len(plan.manifests),
        elsewhere=max(0, files - max(at_location, files)),
    )


def _maps_into(prefix_map: PrefixMap, source: str, target_location: str) -> bool:
    mapping = prefix_map.match_canonical(source)
    return mapping is not None and is_under(canonical(mapping.target), canonical(target_location))


def _refusal(exc: BaseException) -> Finding:
    """A refusal of the planner (or of S3) as a blocker, in its own words."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "error")
        kind = (
            "archived_objects" if code in ("InvalidObjectState", "ObjectNotInActiveTierError") else "s3_error"
        )
        return Finding(kind=kind, message=f"S3 refused a read ({code}): {exc}")
    kind = _snake(type(exc).__name__.removesuffix("Error"))
    return Finding(kind=kind, message=str(exc))


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _few(items: list[str]) -> str:
    return ", ".join(items[:3]) + (" ..." if len(items) > 3 else "")


def _identity(name: str, source_metadata: str, target_location: str, meta: mj.Metadata) -> dict[str, Any]:
    """The fields every table's assessment has, planned or not."""
    return {
        "table": name,
        "source_metadata_location": source_metadata,
        "target_location": target_location,
        "format_version": meta.get("format-version"),
        "snapshots": len(meta.get("snapshots") or []),
        "refs": len(meta.get("refs") or {}),
    }


def _unplanned(
    name: str,
    source_metadata: str,
    target_location: str,
    meta: mj.Metadata,
    history: _History,
    prefixes: list[PrefixUse],
    blockers: list[Finding],
    settings: Settings,
) -> TableAssessment:
    """A table the planner refused: what its metadata says (the summaries' upper bound of its data)."""
    summaries = estimate_size(meta)
    try:
        mapped = table_prefix_map(meta, (), target_location).mappings
    except IcelakeError:
        mapped = []
    known = {p.prefix for p in prefixes}
    prefixes = [
        *(
            PrefixUse(prefix=m.source, files=0, mapped=True, target=m.target)
            for m in mapped
            if m.source not in known
        ),
        *prefixes,
    ]
    return TableAssessment(
        **_identity(name, source_metadata, target_location, meta),
        planned=False,
        data_files=summaries.files if summaries else 0,
        data_bytes=summaries.bytes if summaries else 0,
        prefixes=prefixes,
        engine=_engine(meta, 0, 0, settings),
        blockers=blockers,
        **history.fields(),
    )
