"""The assessment of tables before they move: what `icelake assess` and the workflow's Assess step
both run (one implementation). assessment.json's schema is in icelake/assess/schema.py.

Per table it reads the source metadata, runs the planner a migration runs (`build_plan`, read-only:
it lists and reads, never writes), and turns what it finds into sizes, blockers and warnings
(icelake/assess/gather/findings.py), commit rates (commits.py) and an estimate of the requests the run
will send (expected.py), its time and its cost (estimate.py). A table the planner refuses gets the
refusal as a blocker and sizes from its snapshot summaries.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from icelake.assess.estimate.cost import SYNC_DAYS, summed
from icelake.assess.estimate.engine_choice import (
    PLANNED_BY_GLUE,
    CopyWork,
    EngineChoice,
    Thresholds,
    choose_engine,
)
from icelake.assess.estimate.expected import by_engine, expected_requests
from icelake.assess.estimate.model import (
    PlannedWork,
    TableEstimate,
    ThroughputModel,
    estimate_table,
    full_copy_entries,
    lay_out,
)
from icelake.assess.estimate.prices import PriceTable
from icelake.assess.estimate.sync_window import SyncInputs, per_copy_requests, sync_window
from icelake.assess.estimate.verify_estimate import VerifyWork, verify_estimate
from icelake.assess.gather.commit_entries import entries_per_commit
from icelake.assess.gather.commits import CommitHistory, commit_history, commit_rate_warning
from icelake.assess.gather.findings import SourceObjects, object_findings, refusal
from icelake.assess.pages.kinds import by_kind
from icelake.assess.schema import (
    Assessment,
    DeleteFiles,
    Finding,
    PrefixUse,
    RunEstimate,
    TableAssessment,
    Totals,
    VerifyEstimate,
)
from icelake.aws.fileio import FileIO, S3FileIO
from icelake.aws.request_count import RequestCount, added
from icelake.errors import IcelakeError, UnmappedPrefixesError
from icelake.migrate import metadata_json as mj
from icelake.migrate.history import History
from icelake.migrate.journal import new_target_keys
from icelake.migrate.plan.build import build_plan
from icelake.migrate.plan.model import FileTally, TablePlan
from icelake.migrate.plan.reads import read_metadata
from icelake.migrate.plan.target import table_prefix_map
from icelake.migrate.progress import NoProgress, ProgressSink
from icelake.migrate.settings import EngineSettings
from icelake.migrate.table_size import estimate_size
from icelake.request.schedule import DEFAULT_SYNC_SCHEDULE
from icelake.uris import canonical, parent


@dataclass(frozen=True)
class Settings:
    """How the tables are assessed: the request's thresholds and concurrency, the sync window, the
    prices and the throughput model, and where the planner reports its progress."""

    prices: PriceTable
    model: ThroughputModel = field(default_factory=ThroughputModel)
    glue_threshold_files: int = 20_000
    glue_threshold_bytes: int = 100 * 1024**3
    thresholds_explicit: bool = False  # the request set one: the estimate rule is off (engine_choice)
    verify_glue_threshold_files: int | None = None  # options.verify_glue_threshold_files
    concurrency: int = 4
    prune: bool = True  # the request's options.prune: Validate then reads the target's manifests again
    history: History = "live"  # the request's options.history: what the target keeps
    sync_days: float = SYNC_DAYS
    # How often the syncs run until cutover (a schedule expression: options.sync_interval, the
    # deployment's sync_schedule): the sync window and the cutover's freeze are priced from it.
    sync_interval: str = DEFAULT_SYNC_SCHEDULE
    cross_region: bool = False
    s3tables: bool = False  # target.kind s3tables: stored, written and monitored at S3 Tables' prices
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    progress: ProgressSink | None = None  # the planner's progress (None: not shown)

    @property
    def thresholds(self) -> Thresholds:
        return Thresholds(self.glue_threshold_files, self.glue_threshold_bytes, self.thresholds_explicit)


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
) -> TableAssessment:
    """Assess one table as a migration would move it. `findings`: blockers found by the caller
    (the target catalog and ledger: a diverged, busy or foreign target). Reads only."""
    with _observed(src_io, dst_io) as (counted, objects):
        return _assessed(
            name,
            (source_metadata, target_location, maps),
            (src_io, dst_io),
            settings,
            findings,
            counted,
            objects,
        )


@contextmanager
def _observed(src_io: FileIO, dst_io: FileIO) -> Iterator[tuple[RequestCount, SourceObjects]]:
    """The table's own count of S3 requests and what its reads say of the source objects, for as
    long as it is assessed: the IOs' clients may serve other tables next (an estate's assessment
    lends them), so counting stops when the table is done."""
    counted, objects = RequestCount(), SourceObjects()
    ios = [io for io in (src_io, dst_io) if isinstance(io, S3FileIO)]
    for io in ios:
        counted.attach_io(io)
    if isinstance(src_io, S3FileIO):
        src_io.observe = objects
    try:
        yield counted, objects
    finally:
        for io in ios:
            counted.detach_io(io)
        if isinstance(src_io, S3FileIO):
            src_io.observe = None


def _assessed(
    name: str,
    where: tuple[str, str, Sequence[tuple[str, str]]],
    ios: tuple[FileIO, FileIO],
    settings: Settings,
    findings: Iterable[Finding],
    counted: RequestCount,
    objects: SourceObjects,
) -> TableAssessment:
    """assess_table's work, with the table's requests counted and its source objects observed."""
    source_metadata, target_location, maps = where
    src_io, dst_io = ios
    blockers = list(findings)
    warnings: list[Finding] = []
    try:
        source = read_metadata(src_io, source_metadata)
    except (IcelakeError, ClientError) as exc:
        blockers.append(refusal(exc))
        return TableAssessment(
            table=name,
            source_metadata_location=source_metadata,
            target_location=target_location,
            planned=False,
            blockers=blockers,
        )
    meta = source[0]
    # What the Plan step sends for a table the Glue job plans: it reads the metadata.json, no more
    metadata_read = counted.counts()
    history = commit_history(meta, settings.now)
    plan, prefixes = _plan(source_metadata, target_location, maps, src_io, dst_io, source, blockers, settings)
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
    object_findings(plan, objects, blockers, warnings)
    files_to_copy = len(plan.copies)
    bytes_to_copy = sum(task.info.size for task in plan.copies)
    metadata_paths = [*plan.metadata_files, *plan.manifest_lists, *plan.manifests]
    metadata_bytes = _metadata_bytes(src_io, plan, metadata_paths)
    target_kms = bool(getattr(dst_io, "kms_key_id", None))
    expected = expected_requests(
        plan, target_location, replanned, prune=settings.prune, target_kms=target_kms
    )
    busiest = plan.copies.prefix_spread()[1] if plan.copies else 1.0
    chosen = _engine(meta, CopyWork(files_to_copy, bytes_to_copy, expected["copy"], busiest), settings)
    engine = chosen.engine
    run_requests, validate_requests = by_engine(expected, engine)
    work = PlannedWork(
        plan_requests=metadata_read if chosen.rule == PLANNED_BY_GLUE else plan_requests,
        run_requests=run_requests,
        validate_requests=validate_requests,
        bytes_to_copy=bytes_to_copy,
        files_to_copy=files_to_copy,
        engine=engine,
        busiest_share=busiest,
        entries_read=full_copy_entries(
            plan.manifest_entries(),
            glue=engine == "glue",
            planned_by_glue=chosen.rule == PLANNED_BY_GLUE,
            prune=settings.prune,
        ),
        validated_snapshots=len(meta.get("snapshots") or []),
    )
    estimate = estimate_table(
        work,
        settings.model,
        settings.prices,
        cross_region=settings.cross_region,
        stored_bytes=plan.bytes_planned,
        sync_days=settings.sync_days,
        stored_objects=plan.files_planned if settings.s3tables else None,
    )
    rate_warning = commit_rate_warning(history, estimate.duration_s, settings.sync_days)
    if rate_warning:
        warnings.append(rate_warning)
    inputs = _sync_inputs(plan, settings, target_kms, entries_per_commit(meta, src_io, settings.now))
    window, freeze = sync_window(history.busiest(), estimate, inputs)
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
        engine_rule=chosen.rule,
        blockers=blockers,
        warnings=warnings,
        estimate=estimate,
        sync_window=window,
        cutover=freeze,
        verify=VerifyEstimate(
            **verify_estimate(VerifyWork.of_plan(plan), settings.model, settings.verify_glue_threshold_files)
        ),
        **history.fields(),
    )


def _sync_inputs(plan: TablePlan, settings: Settings, target_kms: bool, entries: float | None) -> SyncInputs:
    """What the sync window is priced with: the settings, a copy of a file like the table's, and
    the manifest entries a commit writes (`entries`)."""
    sample = plan.copies[0].info if plan.copies else None
    return SyncInputs(
        schedule=settings.sync_interval,
        window_days=settings.sync_days,
        model=settings.model,
        prices=settings.prices,
        thresholds=settings.thresholds,
        cross_region=settings.cross_region,
        per_copy=per_copy_requests(
            sample.etag if sample else None,
            bool(sample and sample.checksum is not None),
            target_kms=target_kms,
            streamed=settings.s3tables,
        ),
        directories=plan.copies.prefix_spread()[0] if plan.copies else 1,
        entries_per_commit=entries,
    )


def _plan(
    source_metadata: str,
    target_location: str,
    maps: Sequence[tuple[str, str]],
    src_io: FileIO,
    dst_io: FileIO,
    source: tuple[mj.Metadata, bool],
    blockers: list[Finding],
    settings: Settings,
) -> tuple[TablePlan | None, list[PrefixUse]]:
    """The plan a migration makes (None when it refuses: the refusal joins `blockers`), and the
    unmapped prefixes a refusal named. `settings`: the history the target keeps, the progress."""
    progress, history = settings.progress, settings.history
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
        blockers.append(refusal(exc))
        return None, [PrefixUse(prefix=p, files=n, mapped=False) for p, n in sorted(exc.prefixes.items())]
    except (IcelakeError, ClientError) as exc:
        blockers.append(refusal(exc))
        return None, []
    return plan, []


def assemble(tables: list[TableAssessment], settings: Settings, scope: dict[str, Any]) -> Assessment:
    """The assessment of a run: the tables, their totals, and their layout on the Map's lanes."""
    estimates = [t.estimate for t in tables if t.estimate is not None]
    lanes = lay_out({t.table: t.estimate.duration_s for t in tables if t.estimate}, settings.concurrency)
    duration = max((lane.end_s for lane in lanes), default=0.0) + settings.model.map_overhead_s
    totals = _totals(tables, estimates)
    prices = settings.prices
    return Assessment(
        generated_at=settings.now.isoformat(timespec="seconds"),
        scope=scope,
        tables=tables,
        totals=totals,
        run=RunEstimate(
            concurrency=settings.concurrency,
            duration_s=round(duration, 3),
            duration_range_s=_run_range(tables, settings),
            lanes=lanes,
        ),
        warnings_by_kind=by_kind((t.table, f.kind, f.message) for t in tables for f in t.warnings),
        blockers_by_kind=by_kind((t.table, f.kind, f.message) for t in tables for f in t.blockers),
        model={
            "throughput": settings.model.model_dump(),
            "sync_days": settings.sync_days,
            "sync_interval": settings.sync_interval,
            "cross_region": settings.cross_region,
            "glue_threshold_files": settings.glue_threshold_files,
            "glue_threshold_bytes": settings.glue_threshold_bytes,
            "glue_thresholds_explicit": settings.thresholds_explicit,
            "prices": prices.model_dump(mode="json"),
        },
    )


def _run_range(tables: list[TableAssessment], settings: Settings) -> tuple[float, float]:
    """The run's (low, high): the tables' lows laid on the lanes, and their highs."""
    ranges = {t.table: t.estimate.duration_range_s for t in tables if t.estimate}
    ends = []
    for end in (0, 1):
        lanes = lay_out({k: r[end] for k, r in ranges.items() if r}, settings.concurrency)
        longest = max((lane.end_s for lane in lanes), default=0.0)
        ends.append(round(longest + settings.model.map_overhead_s, 3))
    return ends[0], ends[1]


def _totals(tables: list[TableAssessment], estimates: list[TableEstimate]) -> Totals:
    """Sums over the tables."""
    return Totals(
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
        sync_window_requests=added(*(t.sync_window.requests for t in tables if t.sync_window)),
        sync_window_cost_usd=summed([t.sync_window.cost_usd for t in tables if t.sync_window]),
    )


def _engine(meta: mj.Metadata, work: CopyWork, settings: Settings) -> EngineChoice:
    """As Plan chooses: a table over a threshold by its summaries is planned and copied by Glue;
    else `choose_engine` on what it copies (thresholds, then the Lambda copy's estimate)."""
    summaries = estimate_size(meta)
    t = settings.thresholds
    if summaries is not None and (summaries.files > t.files or summaries.bytes > t.bytes):
        return EngineChoice("glue", PLANNED_BY_GLUE)
    return choose_engine(work, t, settings.model)


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
    history: CommitHistory,
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
        engine=_engine(meta, CopyWork(0, 0, {}), settings).engine,
        blockers=blockers,
        **history.fields(),
    )
