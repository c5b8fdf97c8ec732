"""Glue entry point of the migration workflow for large tables: copy and rewrite one table with the
work spread over Spark executors (`icelake.migrate.copy.distributed`). Arguments resolve through
awsglue when present, else argparse (same names), so the same script runs in AWS Glue and locally.

  --source-metadata URI      the source table's current metadata.json (pinned by the plan step)
  --target-location URI      the target table location
  --map SRC=DST              another prefix to move (repeatable, or one JSON list of "SRC=DST")
  --source-role-arn ARN      role to read the source with (the driver and each executor assume
  --target-role-arn ARN      it and refresh it); without one, the job's own credentials
  --source-external-id ID    sts:ExternalId for the source / target role, when its trust needs one
  --target-external-id ID
  --session-duration-seconds N  DurationSeconds of each assumed-role session, 900..43200 (3600)
  --target-kms-key KEY       KMS key for every object written to the target
  --overwrite [true|false]   replace target files that exist with different content
  --run-id ID                names the assumed-role sessions
  --result-uri URI           where to write the MigrationResult JSON (s3:// or local)
  --journal-uri URI          the run's journal of target keys (what rollback may delete): the keys
                             this job's plan will create are added to it before anything is written
  --local-warehouse DIR      (local runs only) a warehouse for the local session's catalog `local`
  --validation TIER          `rows`: also compare every snapshot's rows here, spread over the
                             executors (icelake.migrate.check.row_digest); other tiers are done by the
                             Validate Lambda from metadata (default: the work item's, else metadata)
  --history live|all         what the target keeps of older logged metadata versions (live)
  --work-item JSON           the workflow's WorkItem (statemachines/migrate_tables.asl.json passes
                             it): roles, KMS key, prefix maps and run id where not given above
  --verify-job URI           modes verify and repair: check a target's files against the copy
                             record instead (icelake.migrate.check.verify_job: what to check, where
                             the check goes); --source-metadata and --target-location are not needed
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any

from icelake.aws.fileio import FileIOSpec, io_for, is_absent
from icelake.aws.fileio.spec import OPENED_REQUESTS
from icelake.aws.request_count import added, subtracted
from icelake.aws.session import DEFAULT_SESSION_SECONDS, AssumedRole, check_session_duration, pyiceberg_props
from icelake.glue_args import in_glue, resolve_options
from icelake.migrate.check.record import RECORD_NAME, RecordBuilder, add_to_record
from icelake.migrate.check.row_digest import compare_rows
from icelake.migrate.check.validate import checked_target_files
from icelake.migrate.check.verify_job import FilesProved, VerifyJob, run_verify_job
from icelake.migrate.copy.distributed import SparkRunner, executor_spec, size_copies
from icelake.migrate.copy.engine import Runner, run_migration
from icelake.migrate.history import HISTORIES, History, dangling_versions, to_source_map
from icelake.migrate.journal import new_target_keys, read_journal, write_journal
from icelake.migrate.models import FilesCheck, MigrationResult, RowsValidation
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.plan.since import FULL, Since
from icelake.migrate.settings import EngineSettings
from icelake.uris import parse_map_option, source_prefixes

OPTIONS = (
    "source_metadata",
    "target_location",
    "map",
    "source_role_arn",
    "target_role_arn",
    "source_external_id",
    "target_external_id",
    "session_duration_seconds",
    "target_kms_key",
    "overwrite",
    "run_id",
    "result_uri",
    "journal_uri",
    "local_warehouse",
    "validation",
    "history",
    "work_item",
    # where a sync starts (icelake.request.sync): the source metadata.json the target was last
    # synced to, else why the whole table is planned
    "sync_from",
    "sync_full_reason",
    "verify_job",
)
REQUIRED = ("source_metadata", "target_location")  # of a migration (a verify needs --verify-job only)
IN_GLUE = in_glue()


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    raw = resolve_options(
        argv,
        OPTIONS,
        prog="migrate_table",
        required=() if "--verify-job" in argv or "--verify_job" in argv else REQUIRED,
        repeatable=("map",),
        flags=("overwrite",),
        defaults={"overwrite": "false"},
    )
    maps = raw["map"]
    args: dict[str, Any] = {
        **raw,
        "map": parse_maps(maps if isinstance(maps, list) else []),
        "overwrite": _flag(str(raw["overwrite"])),
    }
    if raw["work_item"]:
        for key, value in _work_item_args(str(raw["work_item"])).items():
            args[key] = args[key] or value  # explicit arguments win
    args["history"] = history_of(args["history"])
    return argparse.Namespace(**args)


def _work_item_args(work_item: str) -> dict[str, Any]:
    from icelake.request.models import WorkItem

    item = WorkItem.model_validate_json(work_item)
    return {
        "source_role_arn": item.request.source.role_arn,
        "target_role_arn": item.request.target.role_arn,
        "source_external_id": item.request.source.external_id,
        "target_external_id": item.request.target.external_id,
        "session_duration_seconds": str(item.request.options.session_duration_seconds),
        "target_kms_key": item.request.target.kms_key_id,
        "map": [(m.source, m.target) for m in item.request.target.prefix_maps],
        "run_id": item.run_id,
        "validation": item.request.options.validation,
        "history": item.request.options.history,
        "sync_from": item.sync_from,
        "sync_full_reason": item.sync_full_reason,
    }


def parse_maps(values: Sequence[str]) -> list[tuple[str, str]]:
    """Each value is SRC=DST, or a JSON list of SRC=DST strings (one Glue argument holds them all)."""
    out: list[tuple[str, str]] = []
    for value in values:
        items = json.loads(value) if value.lstrip().startswith("[") else [value]
        out += [parse_map_option(item) for item in items]
    return out


def history_of(value: str | None) -> History:
    """--history: live (the default) or all; anything else is refused before any work."""
    value = value or "live"
    if value not in HISTORIES:
        raise SystemExit(f"--history must be one of {', '.join(HISTORIES)}, got {value!r}")
    return value


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1", "yes")


def build_session(local_warehouse: str | None) -> Any:
    """Glue's session; elsewhere the local one (an active session is reused, as in tests)."""
    if IN_GLUE:  # pragma: no cover - only inside AWS Glue
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate()
    from icelake.local.spark import local_spark

    return local_spark({"local": local_warehouse} if local_warehouse else {}, app_name="migrate_table")


def _role(arn: str | None, external_id: str | None, name: str, duration: str | None) -> AssumedRole | None:
    seconds = check_session_duration(
        int(duration) if duration else DEFAULT_SESSION_SECONDS, "--session-duration-seconds"
    )
    if not arn:
        return None
    return AssumedRole(arn, external_id=external_id, session_name=name, duration_seconds=seconds)


def main(argv: list[str] | None = None) -> MigrationResult | FilesProved:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.verify_job:
        return verify_files(args)
    return migrate(args)


def migrate(args: argparse.Namespace) -> MigrationResult:
    run, duration = args.run_id or "glue", args.session_duration_seconds
    src = executor_spec(
        args.source_metadata,
        _role(args.source_role_arn, args.source_external_id, f"icelake-src-{run}", duration),
    )
    dst = executor_spec(
        args.target_location,
        _role(args.target_role_arn, args.target_external_id, f"icelake-dst-{run}", duration),
        kms_key_id=args.target_kms_key,
    )
    spark = build_session(args.local_warehouse)
    runner = SparkRunner(spark.sparkContext)
    # The driver's S3 requests: those of its FileIOs (opened from the specs) while the job runs.
    # A Glue job run is a process of its own; on the embedded AWS, jobs that overlap in one process
    # count each other's driver requests too.
    driver_before = OPENED_REQUESTS.counts()
    settings = EngineSettings(
        overwrite=args.overwrite,
        lock_target=False,  # the workflow holds the table in its ledger (a killed job leaves no lock)
        # the driver's cores parse the manifests while planning, and rewrite the lists and
        # metadata.json files after the copy (one pool of worker processes for both)
        processes=os.cpu_count() or 1,
        history=args.history,
        since=(
            Since(source_metadata=args.sync_from)
            if args.sync_from
            else Since(reason=args.sync_full_reason)
            if args.sync_full_reason
            else FULL  # as the in-process engine says it, so both results compare equal
        ),
        record=RecordBuilder(),
    )
    result = run_migration(
        args.source_metadata,
        args.target_location,
        args.map,
        src=src,
        dst=dst,
        settings=settings,
        runner=runner,
        on_planned=partial(on_planned, runner, args.journal_uri, dst),
    )
    write_copy_record(args.journal_uri, settings.record)
    if args.validation == "rows":
        rows = rows_validation(args.source_metadata, result.target_metadata_location, src, dst, runner)
        result = result.model_copy(update={"rows_validation": rows})
    checked = files_check(result, args.source_metadata, dst, src if result.history == "all" else None)
    sent = added(subtracted(OPENED_REQUESTS.counts(), driver_before), runner.requests)
    result = result.model_copy(update={"files_check": checked, "requests": sent})
    payload = result.model_dump_json()
    if args.result_uri:
        io_for(args.result_uri).write(args.result_uri, payload.encode())
    print(payload)
    return result


def verify_files(args: argparse.Namespace) -> FilesProved:
    """--verify-job: a target's files checked against the copy record on the executors (each
    opens the target as the target role), written where the job says (the Verify step reads it)."""
    job = VerifyJob.model_validate_json(io_for(args.verify_job).read(args.verify_job))
    run, duration = args.run_id or "glue", args.session_duration_seconds
    role = _role(args.target_role_arn, args.target_external_id, f"icelake-dst-{run}", duration)
    dst = executor_spec(job.target_metadata, role)
    runner = SparkRunner(build_session(args.local_warehouse).sparkContext)
    driver_before = OPENED_REQUESTS.counts()
    check = run_verify_job(job, io_for(job.result_uri), dst.open, runner)
    sent = added(subtracted(OPENED_REQUESTS.counts(), driver_before), runner.requests)
    proved = FilesProved.of(check, sent)
    io_for(job.result_uri).write(job.result_uri, proved.model_dump_json().encode())
    print(proved.model_dump_json())
    return proved


def on_planned(runner: SparkRunner, journal_uri: str | None, dst: FileIOSpec, plan: TablePlan) -> None:
    """Before anything is written: the copies' concurrency from the table's prefix spread, and the
    journal of what the copy will create."""
    size_copies(runner, plan)
    if journal_uri:
        journal_plan(journal_uri, dst, plan)


def write_copy_record(journal_uri: str | None, record: RecordBuilder | None) -> None:
    """The proof of every object this run wrote, beside the run's journal (verify and repair
    read it): the executors sent each copy's back with its outcome."""
    if journal_uri and record is not None and len(record):
        uri = journal_uri.rsplit("/", 1)[0] + "/" + RECORD_NAME
        add_to_record(io_for(uri), uri, record)


def journal_plan(journal_uri: str, dst: FileIOSpec, plan: TablePlan) -> None:
    """Add what this plan's copy will create to the run's journal, before anything is written. The
    keys already there stay: an earlier attempt of this run may have written them (and this plan,
    seeing them present, would not name them)."""
    io = io_for(journal_uri)
    keys = set(new_target_keys(plan, dst.open()))
    try:
        keys |= set(read_journal(io, journal_uri))
    except Exception as exc:
        if not is_absent(exc):
            raise
    write_journal(io, journal_uri, sorted(keys))


def rows_validation(
    source_metadata: str, target_metadata: str, src: FileIOSpec, dst: FileIOSpec, runner: Runner
) -> RowsValidation:
    """Every snapshot's rows, source against target, on the executors. The copy is done by now: a
    failure of the check itself is reported as such (Validate fails the table saying so)."""
    try:
        return compare_rows(
            source_metadata,
            target_metadata,
            source=(_pyiceberg_props(src), src),
            target=(_pyiceberg_props(dst), dst),
            runner=runner,
        )
    except Exception as exc:  # any failure of the check: reported, never taken for a bad copy
        return RowsValidation(error=f"{type(exc).__name__}: {exc}")


def files_check(
    result: MigrationResult, source_metadata: str, dst: FileIOSpec, src: FileIOSpec | None = None
) -> FilesCheck:
    """Every file of the target exists with its recorded size and none is the source's: read here,
    next to the copy, instead of every manifest again in the Validate Lambda. With `src` (history
    all), also no logged version dangles where its source counterpart does not. A failure of the
    check itself is reported as such (Validate fails the table saying so)."""
    sources = source_prefixes(source_metadata, (m.source for m in result.prefix_mappings))
    try:
        checked = checked_target_files(dst.open(), result.target_metadata_location, sources)
        if src is None:
            return checked
        to_source = to_source_map(result.prefix_mappings)
        dangling = dangling_versions(src.open(), dst.open(), result.target_metadata_location, to_source)
        return checked.model_copy(update={"problems": [*checked.problems, *dangling]})
    except Exception as exc:  # any failure of the check: reported, never taken for a bad copy
        return FilesCheck(error=f"{type(exc).__name__}: {exc}")


def _pyiceberg_props(spec: FileIOSpec) -> dict[str, str]:
    return {} if spec.scheme == "file" else pyiceberg_props(spec.session())


if __name__ == "__main__":
    main()
