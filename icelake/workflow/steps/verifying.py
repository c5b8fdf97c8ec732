"""Verify (mode "verify"): a migrated or promoted target, checked again on day 2 at the request's
validation tier (icelake/migrate/check/verify.py), with nothing written to any table: no Glue table, no
object, no lock taken; only the run's outcome is recorded in the ledger, as every run's is.

Outcomes: `verified`, or `damaged` with the missing or changed files named (a failed status: the
Report step's event names it and its metric raises the tables-failed alarm). A table icelake has
not migrated, or whose target someone else has committed to before its promotion, is not
verified: `failed` and `diverged` say why.

The files check grows with the table: the step makes it itself, or gives it to the Glue job when
the estimate says the Lambda would take more than 60 % of its timeout, or the table has more files
than `options.verify_glue_threshold_files` (`glue_or_here`; assess/estimate/verify_estimate.py),
and is called again with the job's answer to finish at the request's tier (`glue_checked`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from icelake.assess.estimate.verify_estimate import VerifyWork, choose_verify_engine
from icelake.aws import catalog
from icelake.aws.request_count import added
from icelake.aws.session import pyiceberg_props
from icelake.migrate import metadata_json as mj
from icelake.migrate.check.inventory_report import read_inventory
from icelake.migrate.check.proved import ProofCheck, proved_files
from icelake.migrate.check.record import RECORD_NAME, Record, read_record
from icelake.migrate.check.verify import VerifyReport, verify_alone, verify_synced
from icelake.migrate.check.verify_job import FILES_PROVED_NAME, VERIFY_JOB_NAME, FilesProved, VerifyJob
from icelake.request.deps import Artifacts, Deps, Sessions
from icelake.request.models import WorkItem
from icelake.request.target import foreign_commit
from icelake.throughput import ThroughputModel
from icelake.workflow import table_bucket
from icelake.workflow.failures import TableError, stopped_error, table_error
from icelake.workflow.inputs import PlanInput, VerifyInput, VerifyStep
from icelake.workflow.models import TableOutcome
from icelake.workflow.steps.shared import item_facts, record_outcome, source_prefixes

DAMAGED_HINT = (
    "the target no longer holds what icelake wrote: before promotion, run a full migration of the "
    "table again (identical files are skipped, the damaged ones copied again); after promotion, "
    "restore the named objects from the bucket's versions or backups"
)


# The check of a table at its tier, given its files' check when the Glue job made it.
Checked = Callable[[WorkItem, Deps, Sessions, ProofCheck | None], TableOutcome]


@dataclass(frozen=True)
class CheckedBy:
    """Which engine checked the table's files and by which rule; the Glue job's check with when
    the run's first call began and the requests the job sent."""

    engine: Literal["lambda", "glue"] = "lambda"
    rule: str | None = None
    files: ProofCheck | None = None
    started_at: float | None = None
    requests: dict[str, int] = field(default_factory=dict)


def verify(given: PlanInput | VerifyInput, deps: Deps, by: CheckedBy | None = None) -> TableOutcome:
    return timed_outcome(given, deps, "Verify", _verified, by or CheckedBy())


def timed_outcome(
    given: PlanInput | VerifyInput, deps: Deps, step: str, check: Checked, by: CheckedBy
) -> TableOutcome:
    """`check`'s outcome with its time and requests (the Glue job's too, and the time since the
    run's first call), recorded in the ledger; whatever it raises (a manifest that no longer
    parses, a role denied, a record that cannot be read) is the table's failure, said and not
    raised, so one table never stops the Map."""
    started = time.monotonic()
    item = given.item
    sessions = deps.sessions(item.request)
    try:
        outcome = check(item, deps, sessions, by.files)
    except Exception as exc:
        error = table_error(type(exc).__name__, str(exc), step)
        outcome = TableOutcome(
            run_id=item.run_id, table=item.name, status="failed", error=error, **item_facts(item)
        )
    seconds = time.monotonic() - started
    if by.started_at is not None:
        seconds = time.time() - by.started_at
    update = {
        "engines": {"verify": by.engine},
        "engine_rule": by.rule,
        "seconds": round(seconds, 3),
        "requests": added(sessions.requests.counts(), by.requests),
    }
    outcome = outcome.model_copy(update=update)
    record_outcome(deps.ledger, outcome, outcome.status.upper())
    return outcome


def _verified(item: WorkItem, deps: Deps, sessions: Sessions, files: ProofCheck | None) -> TableOutcome:
    found = migrated_target(item, deps, sessions, "Verify")
    if isinstance(found, TableOutcome):
        return found
    item, synced, current = found
    report = verified_report(item, deps, sessions, synced, current, files)
    if isinstance(report, TableOutcome):
        return report
    facts: dict[str, Any] = {"run_id": item.run_id, "table": item.name, **item_facts(item)}
    return _outcome(report, current, facts)


def migrated_target(
    item: WorkItem, deps: Deps, sessions: Sessions, step: str
) -> tuple[WorkItem, dict[str, Any], str] | TableOutcome:
    """The item (a decommissioned source's prefixes are the version synced from), its last sync
    and the target's current metadata; or why there is nothing to check."""
    if table_bucket.is_table_bucket(item):  # its storage and pointer, from the table bucket
        found = table_bucket.resolve(item, sessions, deps.ledger, create=False)
        item, current = found.item, found.previous
    else:
        table = catalog.get_table(sessions.target.client("glue"), item.target_database, item.target_table)
        current = catalog.metadata_location(table) if table else None
    synced = deps.ledger.last_synced(item.target_location)
    facts: dict[str, Any] = {"run_id": item.run_id, "table": item.name, **item_facts(item)}
    if not synced or current is None:
        why = (
            f"icelake has no validated sync of {item.name} to {item.target_name} on record"
            + ("" if current else " and the target table does not exist")
            + ": migrate it before verifying it"
        )
        error = TableError(type="NotMigrated", message=why, step=step, hint="run a full migration first")
        return TableOutcome(status="failed", error=error, target_metadata_location=current, **facts)
    if item.source_dropped:  # a decommissioned source: its prefixes are the version synced from
        item = item.model_copy(update={"source_metadata_location": str(synced["source_metadata"])})
    return item, synced, current


def verified_report(
    item: WorkItem,
    deps: Deps,
    sessions: Sessions,
    synced: dict[str, Any],
    current: str,
    files: ProofCheck | None = None,
) -> VerifyReport | TableOutcome:
    """The target checked at the request's tier against the copy record (its files' check made
    here, or given: the Glue job's); a diverged target's outcome instead (someone else committed
    to it before its promotion)."""
    facts: dict[str, Any] = {"run_id": item.run_id, "table": item.name, **item_facts(item)}
    options = item.request.options
    tier = options.validation
    target_io = sessions.target_io()
    record = copy_record(deps, synced)
    if files is None:
        inventory = None
        if options.inventory_report:
            inventory = read_inventory(target_io, options.inventory_report, item.target_location)
        files = proved_files(target_io, current, record, source_prefixes(item), inventory=inventory)
    if synced.get("promoted_at"):
        # The table's home: others commit to it now, so its current metadata is what is checked.
        return verify_alone(
            target_io, current, pyiceberg_props(sessions.target), tier, source_prefixes(item), record, files
        )
    diverged = foreign_commit(target_io, synced, current)
    if diverged:
        error = stopped_error("diverged", diverged, "Verify")
        return TableOutcome(status="diverged", error=error, target_metadata_location=current, **facts)
    return verify_synced(
        target_io,
        sessions.source_io(),
        (str(synced["source_metadata"]), current),
        (pyiceberg_props(sessions.source), pyiceberg_props(sessions.target)),
        tier,
        source_prefixes(item),
        record,
        files,
    )


def copy_record(deps: Deps, synced: dict[str, Any]) -> Record:
    """What every run that wrote this target wrote (the ledger lists their journals; each run's
    record lies beside its journal), in one pass, the later run's row winning."""
    return read_record(deps.artifacts.io, record_uris(deps, synced))[0]


def record_uris(deps: Deps, synced: dict[str, Any]) -> list[str]:
    keys = [str(k) for k in synced.get("journals") or []]
    return [deps.artifacts.uri(f"{k.rsplit('/', 1)[0]}/{RECORD_NAME}") for k in keys]


def glue_or_here(given: VerifyInput, deps: Deps) -> VerifyStep | str:
    """When the estimate, or the request's threshold, gives the table's files to the Glue job: what
    the job checks written (`VerifyJob`) and the answer that starts it; else the rule that keeps the
    check here. A table with nothing to check, or whose target cannot be read, stays here too: the
    step's own check then says why."""
    item, started = given.item, time.time()
    sessions = deps.sessions(item.request)
    try:
        found = migrated_target(item, deps, sessions, "Verify")
        if isinstance(found, TableOutcome):
            return "not migrated: checked here"
        item, synced, current = found
        meta, _gz = mj.parse_metadata(current, sessions.target_io().read(current))
    except Exception as exc:  # said by the step's own check, which meets it again
        return f"the target could not be read ({type(exc).__name__}): checked here"
    options = item.request.options
    model = options.throughput or ThroughputModel()
    chosen = choose_verify_engine(VerifyWork.of_metadata(meta), model, options.verify_glue_threshold_files)
    if chosen.engine == "lambda":
        return chosen.rule
    job = VerifyJob(
        target_metadata=current,
        records=record_uris(deps, synced),
        source_prefixes=list(source_prefixes(item)),
        result_uri=deps.artifacts.uri(Artifacts.key(item.run_id, item.name, FILES_PROVED_NAME)),
        started_at=started,
        rule=chosen.rule,
        inventory_report=options.inventory_report,
    )
    job_uri = deps.artifacts.uri(Artifacts.key(item.run_id, item.name, VERIFY_JOB_NAME))
    deps.artifacts.io.write(job_uri, job.model_dump_json().encode())
    return VerifyStep(engine="glue", engine_rule=chosen.rule, job_uri=job_uri)


def glue_checked(given: VerifyInput, deps: Deps) -> CheckedBy | TableOutcome:
    """The Glue job's check, read back; the table's failure when the job failed or wrote none."""
    item = given.item
    glue = given.glue or {}
    job_uri = deps.artifacts.uri(Artifacts.key(item.run_id, item.name, VERIFY_JOB_NAME))
    step = "Repair" if item.request.mode == "repair" else "Verify"
    try:
        job = VerifyJob.model_validate_json(deps.artifacts.io.read(job_uri))
        if "Error" in glue:
            raise RuntimeError(f"{glue['Error']}: {glue.get('Cause', '')}")
        proved = FilesProved.model_validate_json(deps.artifacts.io.read(job.result_uri))
    except Exception as exc:
        error = table_error("GlueVerifyFailed", f"the Glue job's check of the files failed: {exc}", step)
        outcome = TableOutcome(
            run_id=item.run_id, table=item.name, status="failed", error=error, **item_facts(item)
        )
        record_outcome(deps.ledger, outcome, "FAILED")
        return outcome.model_copy(update={"engines": {"verify": "glue"}})
    return CheckedBy("glue", job.rule, proved.check(), job.started_at, proved.requests)


def _outcome(report: VerifyReport, current: str, facts: dict[str, Any]) -> TableOutcome:
    return outcome_of(report, current, facts, "Verify", DAMAGED_HINT)


def outcome_of(
    report: VerifyReport, current: str, facts: dict[str, Any], step: str, hint: str
) -> TableOutcome:
    done = f"verify: {report.files_checked} files; {report.done}"
    if not report.problems:
        return TableOutcome(status="verified", validation=done, target_metadata_location=current, **facts)
    shown = report.problems[:20]
    more = len(report.problems) - len(shown)
    message = f"{facts['target']} is damaged: " + "; ".join(shown) + (f"; and {more} more" if more else "")
    error = TableError(type="Damaged", message=message[:4000], step=step, hint=hint)
    facts = {"damaged_files": [d.path for d in report.damaged], **facts}  # a repair's: what it found
    return TableOutcome(
        status="damaged", validation=done, target_metadata_location=current, error=error, **facts
    )
