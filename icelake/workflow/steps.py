"""The steps of statemachines/migrate_tables.asl.json as plain functions (one per Lambda).

Cross-account work assumes the source role (read) and the target role (write) here, inside the
step; the orchestrator's own credentials only touch the artifacts bucket, the ledger and events.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal

import boto3
from pydantic import ValidationError

from icelake.aws import catalog
from icelake.aws.clients import client as aws_client
from icelake.aws.clients import new_session
from icelake.aws.fileio import FileIO, S3FileIO, io_for
from icelake.aws.ledger import Ledger
from icelake.aws.session import AssumedRole
from icelake.constants import EVENT_SOURCE
from icelake.errors import InvalidRequestError, ValidationFailedError
from icelake.migrate.engine import migrate_table
from icelake.migrate.metadata_json import parse_metadata
from icelake.migrate.models import MigrationResult
from icelake.migrate.plan import build_plan
from icelake.migrate.progress import NoProgress
from icelake.migrate.validate import check_target_files, validate_tables
from icelake.uris import PrefixMap
from icelake.workflow.inputs import (
    InventoryInput,
    PlanInput,
    PlannedInput,
    RegisterResult,
    ReportInput,
    RollbackInput,
)
from icelake.workflow.journal import JOURNAL_NAME, new_target_keys, read_journal, write_journal
from icelake.workflow.models import (
    InventoryResult,
    MigrationRequest,
    PlanResult,
    RunReport,
    RunState,
    RunSummary,
    TableOutcome,
    WorkItem,
)
from icelake.workflow.prune import prune_target
from icelake.workflow.wiring import WorkflowEnv

# Outcomes that mean the table is not where the request wanted it (README "Outcome states").
FAILED_STATUSES = ("failed", "rolled_back", "diverged", "source_dropped", "busy")


@dataclass
class Sessions:
    request: MigrationRequest

    @cached_property
    def orchestrator(self) -> boto3.Session:
        return new_session()

    def role(self, side: Literal["src", "dst"]) -> AssumedRole | None:
        """The source (read) or target (write) role as this request assumes it, if it names one."""
        spec = self.request.source if side == "src" else self.request.target
        if not spec.role_arn:
            return None
        return AssumedRole(
            spec.role_arn,
            external_id=spec.external_id,
            session_name=f"icelake-{side}-{self.request.run_id}",
            duration_seconds=self.request.options.session_duration_seconds,
        )

    def _session(self, side: Literal["src", "dst"]) -> boto3.Session:
        role = self.role(side)
        return role.session() if role else self.orchestrator

    @cached_property
    def source(self) -> boto3.Session:
        return self._session("src")

    @cached_property
    def target(self) -> boto3.Session:
        return self._session("dst")

    def source_io(self) -> FileIO:
        return io_for("s3://x", self.source)

    def target_io(self) -> FileIO:
        return io_for("s3://x", self.target, self.request.target.kms_key_id)


def _artifact_key(run_id: str, table: str, name: str) -> str:
    return f"runs/{run_id}/{table}/{name}"


def _put_json(env: WorkflowEnv, key: str, value: Any) -> None:
    aws_client("s3").put_object(Bucket=env.artifacts_bucket, Key=key, Body=json.dumps(value).encode())


def _read_json(bucket: str, key: str) -> Any:
    return json.loads(aws_client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def _artifacts_io(env: WorkflowEnv) -> FileIO:
    """The artifacts bucket, with the orchestrator's own credentials."""
    return S3FileIO(aws_client("s3"))


def _artifacts_uri(env: WorkflowEnv, key: str) -> str:
    return f"s3://{env.artifacts_bucket}/{key}"


def _record_outcome(ledger: Ledger, outcome: TableOutcome, state: str, **attrs: Any) -> None:
    """The table's last ledger record of the run carries its whole outcome (see `report`)."""
    ledger.record_table(outcome.run_id, outcome.table, state, outcome=outcome.model_dump_json(), **attrs)


def owner_of(item: WorkItem) -> str:
    return f"{item.request.source.account_id}:{item.source_database}.{item.source_table}"


def parse_request(event: dict[str, Any]) -> MigrationRequest:
    try:
        return MigrationRequest.model_validate(event)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors())
        raise InvalidRequestError(f"malformed migration request: {problems}") from None


# --- Inventory ---------------------------------------------------------------------------------


def inventory(event: dict[str, Any], env: WorkflowEnv) -> InventoryResult:
    """`event` is the request, or {"request": ..., "execution_name": ...} from the state machine,
    where the execution name is the default run id."""
    if "request" in event and isinstance(event["request"], dict):
        given = InventoryInput.model_validate(event)
        raw = dict(given.request)
        raw.setdefault("run_id", given.execution_name)
        execution_arn = given.execution_arn
    else:
        raw, execution_arn = event, None
    request = parse_request(raw)
    glue = Sessions(request).source.client("glue")
    chosen: dict[tuple[str, str], dict[str, Any]] = {}
    for database in request.selection.databases:
        if not catalog.database_exists(glue, database):
            raise InvalidRequestError(
                f"database {database} does not exist in account {request.source.account_id}"
            )
        for table in catalog.list_tables(glue, database):
            if catalog.is_iceberg(table) and any(
                fnmatch.fnmatchcase(table["Name"], p) for p in request.selection.patterns
            ):
                chosen[(database, table["Name"])] = table
    problems = []
    dropped: set[tuple[str, str]] = set()
    for ident in request.selection.tables:
        database, name = ident.split(".")
        found = catalog.get_table(glue, database, name)
        if found is None and (database, name) in _migrated_before(request, database, [name]):
            dropped.add((database, name))
        elif found is None:
            problems.append(f"{ident} does not exist in account {request.source.account_id}")
        elif not catalog.is_iceberg(found):
            problems.append(f"{ident} is not an Iceberg table (table_type is not ICEBERG)")
        else:
            chosen[(database, name)] = found
    if problems:
        raise InvalidRequestError("; ".join(problems))
    for database in request.selection.databases:
        names = {n for d, n in chosen if d == database}
        dropped |= {
            (d, n)
            for d, n in _migrated_before(request, database, None)
            if n not in names and any(fnmatch.fnmatchcase(n, p) for p in request.selection.patterns)
        }
    items = [_dropped_item(request, database, name) for database, name in sorted(dropped)]
    for (database, name), table in sorted(chosen.items()):
        location = catalog.metadata_location(table)
        if not location:
            raise InvalidRequestError(f"{database}.{name} has no metadata_location parameter")
        target_db = request.target.database_prefix + database
        items.append(
            WorkItem(
                run_id=request.run_id,
                source_database=database,
                source_table=name,
                source_metadata_location=location,  # pinned: later commits wait for the next run
                target_database=target_db,
                target_table=name,
                target_location=request.target.table_location(target_db, name),
                request=request,
                execution_arn=execution_arn,
            ).model_dump(mode="json")
        )
    key = f"runs/{request.run_id}/worklist.json"
    _put_json(env, key, items)
    return InventoryResult(
        run_id=request.run_id,
        tables=len(items),
        worklist_bucket=env.artifacts_bucket,
        worklist_key=key,
        concurrency=request.options.concurrency,
    )


def _migrated_before(
    request: MigrationRequest, database: str, names: list[str] | None
) -> set[tuple[str, str]]:
    """Source tables of `database` (all, or `names`) that icelake registered in the target catalog:
    the target tables that carry this source's owner mark."""
    glue = Sessions(request).target.client("glue")
    target_db = request.target.database_prefix + database
    if names is None:
        if not catalog.database_exists(glue, target_db):
            return set()
        candidates = catalog.list_tables(glue, target_db)
    else:
        candidates = [t for n in names if (t := catalog.get_table(glue, target_db, n)) is not None]
    mark = f"{request.source.account_id}:{database}."
    owners = (t.get("Parameters", {}).get(catalog.OWNER_PARAMETER) or "" for t in candidates)
    return {(database, owner[len(mark) :]) for owner in owners if owner.startswith(mark)}


def _dropped_item(request: MigrationRequest, database: str, name: str) -> dict[str, Any]:
    target_db = request.target.database_prefix + database
    return WorkItem(
        run_id=request.run_id,
        source_database=database,
        source_table=name,
        source_metadata_location="",
        target_database=target_db,
        target_table=name,
        target_location=request.target.table_location(target_db, name),
        request=request,
        source_dropped=True,
    ).model_dump(mode="json")


# --- Plan --------------------------------------------------------------------------------------


def _maps(item: WorkItem) -> list[tuple[str, str]]:
    return [(m.source, m.target) for m in item.request.target.prefix_maps]


def plan(event: dict[str, Any], env: WorkflowEnv) -> PlanResult:
    item = PlanInput.model_validate(event).item
    sessions = Sessions(item.request)
    if item.request.mode == "cutover" and not item.source_dropped:
        item = _with_current_source(item, sessions)
    ledger = Ledger(sessions.orchestrator.client("dynamodb"), env.ledger_table)
    existing = catalog.get_table(sessions.target.client("glue"), item.target_database, item.target_table)
    target_name = f"{item.target_database}.{item.target_table}"
    catalog.check_target_is_ours(existing, owner_of(item), target_name)
    previous = catalog.metadata_location(existing) if existing else None
    synced = ledger.last_synced(item.target_location)
    if synced and synced.get("promoted_at"):
        why = (
            f"{target_name} was promoted at {synced['promoted_at']} by run {synced.get('promoted_by')}: "
            "it is the table's home now, and icelake writes nothing to it"
        )
        return _stopped(item, ledger, "promoted", why, previous, existing is not None)
    holder = _claim(item, ledger, sessions)
    if holder:
        return _stopped(item, ledger, "busy", holder, previous, existing is not None)
    dst_io = sessions.target_io()
    if item.source_dropped:
        why = (
            f"{item.name} no longer exists in account {item.request.source.account_id}; its target "
            f"{target_name} was left as it is. Drop the target table, or keep it as the table's new home"
        )
        return _stopped(item, ledger, "source_dropped", why, previous, existing is not None)
    diverged = _foreign_commit(dst_io, synced, previous)
    if diverged:
        return _stopped(item, ledger, "diverged", diverged, previous, existing is not None)
    table_plan = build_plan(
        item.source_metadata_location,
        item.target_location,
        _maps(item),
        sessions.source_io(),
        dst_io,
        overwrite=False,
        workers=16,
        progress=NoProgress(),
    )
    copy_key = _artifact_key(item.run_id, item.name, "copy-result.json")
    # Written before the copy starts: what rollback may delete, should anything fail later.
    journal_key = _artifact_key(item.run_id, item.name, JOURNAL_NAME)
    write_journal(_artifacts_io(env), _artifacts_uri(env, journal_key), new_target_keys(table_plan, dst_io))
    to_copy = sum(t.info.size for t in table_plan.copies)
    in_sync = (
        item.request.mode in ("incremental", "cutover")
        and synced is not None
        and synced.get("source_metadata") == item.source_metadata_location
        and previous == table_plan.target_metadata
    )
    engine: Literal["lambda", "glue", "none"]
    if item.request.options.dry_run or in_sync:
        engine = "none"
    else:
        options = item.request.options
        many = len(table_plan.copies) > options.glue_threshold_files
        engine = "glue" if many or to_copy > options.glue_threshold_bytes else "lambda"
    ledger.record_table(
        item.run_id,
        item.name,
        "PLANNED",
        source_metadata=item.source_metadata_location,
        target_metadata=table_plan.target_metadata,
        previous_target_metadata=previous,
        target_table_existed=existing is not None,
        engine=engine,
    )
    return PlanResult(
        item=item,
        engine=engine,
        files_planned=table_plan.files_planned,
        bytes_planned=table_plan.bytes_planned,
        files_to_copy=len(table_plan.copies),
        bytes_to_copy=to_copy,
        previous_target_metadata=previous,
        target_table_existed=existing is not None,
        target_metadata_location=table_plan.target_metadata,
        journal_key=journal_key,
        copy_result_uri=f"s3://{env.artifacts_bucket}/{copy_key}",
    )


def _with_current_source(item: WorkItem, sessions: Sessions) -> WorkItem:
    """A cutover syncs to the source as it is now, not as inventory pinned it: a sync that runs
    again because the source moved must catch up with the move."""
    table = catalog.get_table(sessions.source.client("glue"), item.source_database, item.source_table)
    location = catalog.metadata_location(table) if table else None
    if location is None:
        return item
    return item.model_copy(update={"source_metadata_location": location})


LOCK_LEASE_SECONDS = 24 * 3600  # longer than any table's copy; only a dead run's hold ever expires


def _claim(item: WorkItem, ledger: Ledger, sessions: Sessions) -> str | None:
    """Take the table for this run; None when taken, else why another run has it."""
    holder = ledger.claim_table(item.target_location, item.run_id, item.execution_arn, LOCK_LEASE_SECONDS)
    if holder is None:
        return None
    other = str(holder.get("run_id"))
    holder_arn = holder.get("execution_arn")
    if holder_arn:  # a run that has ended (failed, aborted, timed out) holds nothing any more
        sfn = sessions.orchestrator.client("stepfunctions")
        status = sfn.describe_execution(executionArn=holder_arn)["status"]
        if status != "RUNNING" and ledger.take_over_table(
            item.target_location, item.run_id, item.execution_arn, LOCK_LEASE_SECONDS, other
        ):
            return None
    claimed = datetime.fromtimestamp(int(holder.get("claimed_at", 0)), UTC).isoformat(timespec="seconds")
    return (
        f"run {other} has been working on {item.target_location} since {claimed}; this run left the "
        "table alone: run it again when that run has ended"
    )


def _foreign_commit(dst_io: FileIO, synced: dict[str, Any] | None, current: str | None) -> str | None:
    """Why the target table is no longer what icelake last registered, or None if it still is.

    A later commit by anyone else (an engine writing to the migrated table) moves the Glue
    pointer; syncing over it would silently revert that commit."""
    registered = synced.get("target_metadata") if synced else None
    if not registered or current is None or current == registered:
        return None  # never synced, dropped (to migrate again), or still ours
    try:
        updated_ms = json.loads(dst_io.read(current)).get("last-updated-ms")
        when = f"at {datetime.fromtimestamp(updated_ms / 1000, UTC).isoformat(timespec='seconds')}"
    except Exception:  # the foreign metadata may be gzipped, gone or unreadable: say so, go on
        when = "at a time its metadata does not tell"
    return (
        f"the target table was committed to by someone else {when}: its metadata is {current}, "
        f"icelake last registered {registered}; nothing was written. Keep the target's commits "
        "(stop syncing this table), or drop the target table to migrate it again"
    )


def _stopped(
    item: WorkItem,
    ledger: Ledger,
    status: Literal["diverged", "source_dropped", "busy", "promoted"],
    why: str,
    current: str | None,
    existed: bool,
) -> PlanResult:
    """The table is left alone: nothing is written, so there is nothing to roll back."""
    ledger.record_table(item.run_id, item.name, status.upper(), error=why, previous_target_metadata=current)
    return PlanResult(
        item=item,
        engine="none",
        files_planned=0,
        bytes_planned=0,
        files_to_copy=0,
        bytes_to_copy=0,
        previous_target_metadata=current,
        target_table_existed=existed,
        target_metadata_location=current or "",
        journal_key=_artifact_key(item.run_id, item.name, JOURNAL_NAME),  # never written: nothing to undo
        copy_result_uri="",
        stopped=status,
        stop_reason=why,
    )


# --- Copy (small tables; large ones run glue_jobs/migrate_table.py with the same arguments) -----


def copy(event: dict[str, Any], env: WorkflowEnv) -> MigrationResult:
    planned = PlannedInput.model_validate(event).plan
    item = planned.item
    sessions = Sessions(item.request)
    Ledger(sessions.orchestrator.client("dynamodb"), env.ledger_table).record_table(
        item.run_id, item.name, "COPYING"
    )
    result = migrate_table(
        item.source_metadata_location,
        item.target_location,
        _maps(item),
        src_io=sessions.source_io(),
        dst_io=sessions.target_io(),
        processes=1,  # Lambda cannot start worker processes
        lock_target=False,  # the table's lock is in the ledger: a timed-out Lambda leaves none behind
    )
    io_for(planned.copy_result_uri, sessions.orchestrator).write(
        planned.copy_result_uri, result.model_dump_json().encode()
    )
    return result


# --- Register ----------------------------------------------------------------------------------


def register(event: dict[str, Any], env: WorkflowEnv) -> RegisterResult:
    planned = PlannedInput.model_validate(event).plan
    item = planned.item
    sessions = Sessions(item.request)
    glue = sessions.target.client("glue")
    catalog.register_table(
        glue,
        item.target_database,
        item.target_table,
        item.target_location,
        planned.target_metadata_location,
        planned.previous_target_metadata,
        owner_of(item),
    )
    for principal in item.request.target.lake_formation_principals:
        sessions.target.client("lakeformation").grant_permissions(
            Principal={"DataLakePrincipalIdentifier": principal},
            Resource={"Table": {"DatabaseName": item.target_database, "Name": item.target_table}},
            Permissions=["SELECT", "DESCRIBE"],
        )
    Ledger(sessions.orchestrator.client("dynamodb"), env.ledger_table).record_table(
        item.run_id, item.name, "REGISTERED"
    )
    return RegisterResult(
        table=f"{item.target_database}.{item.target_table}",
        metadata_location=planned.target_metadata_location,
    )


# --- Validate ----------------------------------------------------------------------------------


def _pyiceberg_props(session: boto3.Session) -> dict[str, str]:
    creds = session.get_credentials().get_frozen_credentials()
    props = {
        "s3.access-key-id": creds.access_key,
        "s3.secret-access-key": creds.secret_key,
        "s3.region": session.region_name or "us-east-1",
    }
    if creds.token:
        props["s3.session-token"] = creds.token
    if os.environ.get("AWS_ENDPOINT_URL"):
        props["s3.endpoint"] = os.environ["AWS_ENDPOINT_URL"]
    return props


def _source_prefixes(item: WorkItem) -> list[str]:
    meta_dir = item.source_metadata_location.rsplit("/", 2)[0]  # <location>/metadata/<file>
    return [meta_dir, *(m.source for m in item.request.target.prefix_maps)]


def validate(event: dict[str, Any], env: WorkflowEnv) -> TableOutcome:
    planned = PlannedInput.model_validate(event).plan
    if planned.engine == "none":  # dry run, in sync, or left alone: nothing was written to check
        outcome = skipped(event)
        ledger = Ledger(aws_client("dynamodb"), env.ledger_table)
        if outcome.status == "in_sync" and planned.item.request.mode == "cutover":
            outcome = _cutover(planned, Sessions(planned.item.request), ledger, outcome)
        _record_outcome(ledger, outcome, _ledger_state(outcome))
        if outcome.status != "busy":  # a busy table's lock is another run's
            ledger.release_table(planned.item.target_location, planned.item.run_id)
        return outcome
    item = planned.item
    sessions = Sessions(item.request)
    ledger = Ledger(sessions.orchestrator.client("dynamodb"), env.ledger_table)
    copied = MigrationResult.model_validate_json(
        io_for(planned.copy_result_uri, sessions.orchestrator).read(planned.copy_result_uri)
    )
    report = validate_tables(
        item.source_metadata_location,
        planned.target_metadata_location,
        source_props=_pyiceberg_props(sessions.source),
        target_props=_pyiceberg_props(sessions.target),
        tier=item.request.options.validation,
    )
    source_prefixes = _source_prefixes(item)
    problems = report.problems + check_target_files(
        sessions.target_io(), planned.target_metadata_location, source_prefixes
    )
    if problems:
        raise ValidationFailedError(f"{item.name}: the target is not the same table: {problems[:10]}")
    ledger.record_synced(
        item.target_location,
        item.source_metadata_location,
        planned.target_metadata_location,
        item.run_id,
        journal_key=planned.journal_key,
    )
    pruned, prune_error = _prune(planned, sessions, ledger, env) if item.request.options.prune else (0, None)
    outcome = TableOutcome(
        run_id=item.run_id,
        table=item.name,
        status="migrated",
        target_metadata_location=planned.target_metadata_location,
        files_copied=copied.files_copied,
        files_verified=copied.files_verified,
        bytes_copied=copied.bytes_copied,
        files_rewritten=copied.files_rewritten,
        files_skipped=copied.files_skipped,
        snapshots_validated=copied.snapshots,
        validation="; ".join([report.tier, *report.notes[:3]]),
        files_pruned=pruned,
        error=prune_error,
        seconds=copied.elapsed_seconds,
    )
    if item.request.mode == "cutover":
        outcome = _cutover(planned, sessions, ledger, outcome)
    _record_outcome(ledger, outcome, _ledger_state(outcome), snapshots_validated=len(report.snapshots))
    ledger.release_table(item.target_location, item.run_id)
    return outcome


def _ledger_state(outcome: TableOutcome) -> str:
    if outcome.sync_again:
        return "SYNCING_AGAIN"
    return "VALIDATED" if outcome.status == "migrated" else outcome.status.upper()


def _prune(
    planned: PlanResult, sessions: Sessions, ledger: Ledger, env: WorkflowEnv
) -> tuple[int, str | None]:
    """Mirror the source's retention (prune.py says what may go). A failed prune does not undo a
    validated sync: the outcome says so, and the next run prunes again."""
    item = planned.item
    synced = ledger.last_synced(item.target_location) or {}
    journals = [_artifacts_uri(env, key) for key in synced.get("journals", [])]
    try:
        deleted = prune_target(
            sessions.target_io(),
            _artifacts_io(env),
            journals,
            item.target_location,
            planned.target_metadata_location,
        )
    except Exception as exc:
        return 0, f"the sync is good, but pruning expired files failed ({exc}); the next run prunes again"
    return len(deleted), None


# --- Cutover -----------------------------------------------------------------------------------


def _current_snapshot(io: FileIO, metadata_location: str) -> int | None:
    meta, _gz = parse_metadata(metadata_location, io.read(metadata_location))
    snapshot = meta.get("current-snapshot-id")
    return int(snapshot) if snapshot is not None and snapshot != -1 else None


def _cutover(planned: PlanResult, sessions: Sessions, ledger: Ledger, synced: TableOutcome) -> TableOutcome:
    """The sync just validated; promote the target if the source did not move meanwhile, else ask
    the state machine to sync again (at most `cutover_attempts` syncs in all)."""
    item = planned.item
    options = item.request.options
    source = catalog.get_table(sessions.source.client("glue"), item.source_database, item.source_table)
    now_at = catalog.metadata_location(source) if source else None
    if now_at != item.source_metadata_location:
        syncs = ledger.count_cutover_attempt(item.run_id, item.name)
        if syncs < options.cutover_attempts:
            return synced.model_copy(update={"sync_again": True})
        return synced.model_copy(
            update={
                "status": "failed",
                "error": f"the source {item.name} moved during each of {syncs} syncs (now {now_at}); the "
                "target is a good copy of an earlier version and was not promoted: stop the source's "
                "writers, then run the cutover again",
            }
        )
    source_snapshot = _current_snapshot(sessions.source_io(), item.source_metadata_location)
    target_snapshot = _current_snapshot(sessions.target_io(), planned.target_metadata_location)
    if source_snapshot != target_snapshot:
        raise ValidationFailedError(
            f"{item.name}: the target's current snapshot {target_snapshot} is not the source's "
            f"{source_snapshot}; not promoted"
        )
    promoted_at = datetime.now(UTC).isoformat(timespec="seconds")
    catalog.set_parameters(
        sessions.target.client("glue"),
        item.target_database,
        item.target_table,
        {catalog.PROMOTED_PARAMETER: promoted_at},
    )
    if options.mark_source:
        catalog.set_parameters(
            sessions.source.client("glue"),
            item.source_database,
            item.source_table,
            {catalog.PROMOTED_TO_PARAMETER: f"{item.request.target.account_id}:{item.target_location}"},
        )
    ledger.mark_promoted(item.target_location, item.run_id, promoted_at)
    return synced.model_copy(
        update={
            "status": "promoted",
            "target_metadata_location": planned.target_metadata_location,
            "source_snapshot_id": source_snapshot,
            "target_snapshot_id": target_snapshot,
        }
    )


def skipped(event: dict[str, Any]) -> TableOutcome:
    planned = PlannedInput.model_validate(event).plan
    if planned.stopped:
        return TableOutcome(
            run_id=planned.item.run_id,
            table=planned.item.name,
            status=planned.stopped,
            target_metadata_location=planned.previous_target_metadata,
            error=planned.stop_reason,
        )
    status: Literal["dry_run", "in_sync"] = "dry_run" if planned.item.request.options.dry_run else "in_sync"
    return TableOutcome(
        run_id=planned.item.run_id,
        table=planned.item.name,
        status=status,
        target_metadata_location=planned.target_metadata_location,
        files_copied=planned.files_to_copy if status == "dry_run" else 0,
        bytes_copied=planned.bytes_to_copy if status == "dry_run" else 0,
    )


# --- Rollback ----------------------------------------------------------------------------------


def rollback(event: dict[str, Any], env: WorkflowEnv) -> TableOutcome:
    """Remove what this run wrote for the table and restore its Glue entry. Never writes the source."""
    given = RollbackInput.model_validate(event)
    item = given.item
    error = given.error or {}
    cause = str(error.get("Cause") or error.get("Error") or "unknown error")
    if error.get("Step") == "Validate":
        cause = (
            f"validation failed, not the copy ({error.get('Error') or 'error'}): the copied table could "
            f"not be shown to read like its source, so it was rolled back. {cause}"
        )
    sessions = Sessions(item.request)
    ledger = Ledger(sessions.orchestrator.client("dynamodb"), env.ledger_table)
    planned = given.plan
    removed = 0
    if planned is not None:
        journaled = read_journal(_artifacts_io(env), _artifacts_uri(env, planned.journal_key))
        source = PrefixMap([(p, "s3://never/written") for p in _source_prefixes(item)])
        removed = sessions.target_io().delete_many([k for k in journaled if not source.under_any_source(k)])
        catalog.restore_table(
            sessions.target.client("glue"),
            item.target_database,
            item.target_table,
            planned.previous_target_metadata,
            owner_of(item),
        )
    outcome = TableOutcome(run_id=item.run_id, table=item.name, status="rolled_back", error=cause[:2000])
    _record_outcome(ledger, outcome, "ROLLED_BACK", error=outcome.error, files_removed=removed)
    ledger.release_table(item.target_location, item.run_id)
    return outcome


# --- Report ------------------------------------------------------------------------------------


def _failed(run_id: str, table: str, error: str) -> TableOutcome:
    return TableOutcome(run_id=run_id, table=table, status="failed", error=error[:2000])


def _item_name(item: dict[str, Any]) -> str:
    return f"{item['source_database']}.{item['source_table']}"


def _result_outcome(run_id: str, status: str, entry: dict[str, Any]) -> TableOutcome:
    """One child execution of a ResultWriter result file as the table's outcome."""
    if status == "SUCCEEDED":
        try:
            return TableOutcome.model_validate_json(entry["Output"])
        except (KeyError, TypeError, ValidationError) as exc:
            error = f"unreadable output of {entry.get('ExecutionArn', 'a child execution')}: {exc}"
    elif status == "FAILED":  # failed despite the item's own catches (e.g. a States.Runtime error)
        error = f"{entry.get('Error') or 'States.ALL'}: {entry.get('Cause') or 'no cause given'}"
    else:
        error = f"the Map run ended before this table finished ({status})"
    try:
        table = _item_name(json.loads(entry["Input"])["item"])
    except (KeyError, TypeError, ValueError):
        table = "unknown"
    return _failed(run_id, table, error)


def map_outcomes(run_id: str, writer_details: dict[str, Any]) -> Iterator[TableOutcome]:
    """The outcomes a Distributed Map exported with its ResultWriter, one result file at a time.

    `writer_details` is the Map's ResultWriterDetails: {Bucket, Key} of its manifest.json, whose
    ResultFiles list the result files ({Key, Size}) by status: SUCCEEDED, FAILED, PENDING. A result
    file is a JSON array of child executions: Input and Output are the iteration's input and output as
    JSON strings; FAILED ones carry Error and Cause instead of Output.
    """
    manifest = _read_json(writer_details["Bucket"], writer_details["Key"])
    bucket = manifest.get("DestinationBucket") or writer_details["Bucket"]
    for status, files in manifest.get("ResultFiles", {}).items():
        for result_file in files:
            for entry in _read_json(bucket, result_file["Key"]):
                yield _result_outcome(run_id, status, entry)


def _ledger_outcomes(run_id: str, tables: Iterable[str], env: WorkflowEnv) -> Iterator[TableOutcome]:
    """Outcomes of worklist tables that no Map result covers, as their item's last step recorded them
    in the ledger; a table without one failed. (moto 5.2.5, the embedded runtime, writes the
    ResultWriter's manifest but no result files: there every table comes from here.)"""
    rows = {
        str(r["sk"]).removeprefix("TABLE#"): r
        for r in Ledger(aws_client("dynamodb"), env.ledger_table).run_tables(run_id)
    }
    for table in tables:
        row = rows.get(table, {})
        if row.get("outcome"):
            yield TableOutcome.model_validate_json(row["outcome"])
        else:
            yield _failed(
                run_id, table, f"no outcome recorded (last state in the ledger: {row.get('state', 'none')})"
            )


def run_outcomes(event: dict[str, Any], env: WorkflowEnv) -> list[TableOutcome]:
    """Every table's outcome: inline `outcomes`, the Map's exported results (`map_results`, its output
    with a ResultWriter), and for worklist tables neither covers (`worklist_bucket`/`worklist_key`),
    the ledger. So no table of the run is missing from its report."""
    given = ReportInput.model_validate(event)
    run_id = given.run_id
    outcomes = list(given.outcomes)
    if given.map_results:
        outcomes.extend(map_outcomes(run_id, given.map_results["ResultWriterDetails"]))
    if given.worklist_key:
        seen = {o.table for o in outcomes}
        worklist = _read_json(given.worklist_bucket or env.artifacts_bucket, given.worklist_key)
        missing = [name for name in map(_item_name, worklist) if name not in seen]
        if missing:
            outcomes.extend(_ledger_outcomes(run_id, missing, env))
    return outcomes


def report(event: dict[str, Any], env: WorkflowEnv) -> RunSummary:
    """Write every table's outcome to runs/<run_id>/report.json; return a summary of a few hundred
    bytes whatever the number of tables (Step Functions caps a state's payload at 256 KiB)."""
    run_id = str(event["run_id"])
    outcomes = run_outcomes(event, env)
    counts = Counter(o.status for o in outcomes)
    failed = sum(n for s, n in counts.items() if s in FAILED_STATUSES)
    status: RunState = "succeeded" if failed == 0 else ("failed" if failed == len(outcomes) else "partial")
    key = f"runs/{run_id}/report.json"
    uri = f"s3://{env.artifacts_bucket}/{key}"
    _put_json(
        env,
        key,
        RunReport(run_id=run_id, status=status, tables=outcomes, report_uri=uri).model_dump(mode="json"),
    )
    aws_client("events").put_events(
        Entries=[
            {
                "Source": EVENT_SOURCE,
                "DetailType": f"Migration run {status}",
                "Detail": json.dumps(
                    {"run_id": run_id, "status": status, "failed": failed, "tables": len(outcomes)}
                ),
                "EventBusName": env.event_bus,
            }
        ]
    )
    return RunSummary(
        run_id=run_id,
        status=status,
        tables=len(outcomes),
        counts=dict(sorted(counts.items())),
        files_pruned=sum(o.files_pruned for o in outcomes),
        report_uri=uri,
    )
