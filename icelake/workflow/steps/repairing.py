"""Repair (mode "repair", through verify's Map and Lambda): a target verified at the request's
tier, its damaged or missing files written again from the source where the source still holds
what was copied (icelake/migrate/check/repair.py), then verified again at the same tier.

Outcomes: `verified` (whole, `repaired_files` names what was written again), or `damaged` naming
each file left and why, with what to do. Nothing is written when the source is decommissioned
after promotion; the Glue table is never touched.

When the Glue job checked the table's files (verifying.glue_or_here), the check after the writes
asks only about the files written, where those are data or delete files; a repaired manifest,
manifest list or metadata.json reaches files the job could not, and the table is checked again
here whole."""

from __future__ import annotations

from typing import Any

from icelake.migrate import metadata_json as mj
from icelake.migrate.check.proof_chunks import Chunk, FileToProve, check_chunk
from icelake.migrate.check.proved import Damage, ProofCheck
from icelake.migrate.check.record import COPY, RECORD_NAME, Proof, RecordBuilder, write_record
from icelake.migrate.check.repair import RepairSources, Unrepairable, plan_repairs, write_repairs
from icelake.migrate.check.verify import VerifyReport
from icelake.migrate.journal import JOURNAL_NAME, write_journal
from icelake.migrate.plan.target import table_prefix_map
from icelake.request.deps import Artifacts, Deps, Sessions
from icelake.request.models import WorkItem
from icelake.request.target import prefix_maps
from icelake.uris import canonical
from icelake.workflow.failures import stopped_error
from icelake.workflow.inputs import PlanInput, VerifyInput, VerifyStep
from icelake.workflow.models import TableOutcome
from icelake.workflow.steps.planning import claim
from icelake.workflow.steps.shared import item_facts
from icelake.workflow.steps.verifying import (
    CheckedBy,
    copy_record,
    glue_checked,
    glue_or_here,
    migrated_target,
    outcome_of,
    timed_outcome,
    verified_report,
    verify,
)

LEAVES = (COPY, "delete file")  # what a repaired file may be for the Glue job's check to stand

UNREPAIRED_HINT = (
    "each file named was left as it is, with why: restore it from a backup or the bucket's object "
    "versions, or roll the table back to a snapshot that does not need it (each file names them)"
)
DECOMMISSIONED = (
    "the table is promoted and its source decommissioned: there is nothing to copy again, and "
    "repair wrote nothing"
)


def verify_or_repair(given: VerifyInput, deps: Deps) -> VerifyStep:
    """The Verify Lambda's step: mode repair repairs, every other mode verifies; the table's files
    checked here, or by the Glue job (then this step is called again with its answer)."""
    act = repair if given.item.request.mode == "repair" else verify
    if given.glue is None:
        where = glue_or_here(given, deps)
        if isinstance(where, VerifyStep):
            return where
        outcome = act(given, deps, CheckedBy("lambda", where))
        return VerifyStep(engine="lambda", engine_rule=where, outcome=outcome)
    by = glue_checked(given, deps)
    if isinstance(by, TableOutcome):
        return VerifyStep(engine="glue", engine_rule="the Glue job's check failed", outcome=by)
    return VerifyStep(engine="glue", engine_rule=by.rule or "", outcome=act(given, deps, by))


def repair(given: PlanInput | VerifyInput, deps: Deps, by: CheckedBy | None = None) -> TableOutcome:
    return timed_outcome(given, deps, "Repair", _repaired, by or CheckedBy())


def _repaired(item: WorkItem, deps: Deps, sessions: Sessions, files: ProofCheck | None) -> TableOutcome:
    found = migrated_target(item, deps, sessions, "Repair")
    if isinstance(found, TableOutcome):
        return found
    item, synced, current = found
    facts: dict[str, Any] = {"run_id": item.run_id, "table": item.name, **item_facts(item)}
    report = verified_report(item, deps, sessions, synced, current, files)
    if isinstance(report, TableOutcome) or not report.problems:
        return (
            report if isinstance(report, TableOutcome) else outcome_of(report, current, facts, "Repair", "")
        )
    facts["damaged_files"] = [d.path for d in report.damaged]  # what this run found
    if synced.get("promoted_at") and item.source_dropped:
        said = VerifyReport(
            [DECOMMISSIONED, *report.problems], report.files_checked, report.done, report.damaged
        )
        return outcome_of(said, current, facts, "Repair", UNREPAIRED_HINT)
    record = copy_record(deps, synced)
    source_io = sessions.source_io()
    source_metadata = str(synced["source_metadata"])
    meta, _gz = mj.parse_metadata(source_metadata, source_io.read(source_metadata))
    prefix_map = table_prefix_map(meta, prefix_maps(item), item.target_location)
    repairs, refused = plan_repairs(report.damaged, RepairSources(source_io, prefix_map, record, current))
    journal_key = Artifacts.key(item.run_id, item.name, JOURNAL_NAME)

    def journal(keys: list[str]) -> None:  # before the first write, as every copy's
        write_journal(deps.artifacts.io, deps.artifacts.uri(journal_key), keys)

    busy = claim(item, deps) if repairs else None  # writes wait for no other run: it holds the table
    if busy is not None:
        error = stopped_error("busy", busy, "Repair")
        return TableOutcome(status="busy", error=error, target_metadata_location=current, **facts)
    try:
        written = write_repairs(repairs, source_io, sessions.target_io(), journal)
    finally:
        if repairs:
            deps.ledger.release_table(item.target_location, item.run_id)
    if written:
        proofs = RecordBuilder()
        for proof in written:
            proofs.add(proof)
        record_key = Artifacts.key(item.run_id, item.name, RECORD_NAME)
        write_record(deps.artifacts.io, deps.artifacts.uri(record_key), proofs.table())
        deps.ledger.add_journal(item.target_location, journal_key)
        synced = {**synced, "journals": [*(synced.get("journals") or []), journal_key]}
    again = _rechecked(files, written, sessions) if files is not None else None
    after = verified_report(item, deps, sessions, synced, current, again)
    assert not isinstance(after, TableOutcome)  # the same target, checked again
    repaired = [p.target for p in written]
    return _after(after, refused, repaired, current, facts)


def _after(
    after: VerifyReport, refused: list[Unrepairable], repaired: list[str], current: str, facts: dict[str, Any]
) -> TableOutcome:
    """The outcome once repaired: the check after the writes, each file not repaired said with why."""
    facts = {**facts, "repaired_files": repaired}
    if not after.problems and not refused:
        return outcome_of(after, current, facts, "Repair", "")
    named = {u.damage.path for u in refused}
    still = [d for d in after.damaged if d.path not in named]
    problems = [str(u) for u in refused]
    problems += [p for p in after.problems if p not in {str(d) for d in after.damaged if d.path in named}]
    left = VerifyReport(problems, after.files_checked, after.done, [u.damage for u in refused] + still)
    return outcome_of(left, current, facts, "Repair", UNREPAIRED_HINT)


def _rechecked(files: ProofCheck, written: list[Proof], sessions: Sessions) -> ProofCheck | None:
    """The Glue job's check with the files repair wrote checked again (a HEAD each, against the
    proof of the write); None when one of them is not a leaf: the files it reaches were not
    checked by the job, and the whole table is checked again."""
    if any(p.kind not in LEAVES for p in written):
        return None
    target_io = sessions.target_io()
    chunk = Chunk(tuple(FileToProve(p.target, p.size, p.kind, p) for p in written))
    found = check_chunk(lambda: target_io, chunk) if written else None
    paths = {canonical(p.target) for p in written}
    damaged = [d for d in files.damaged if canonical(d.path) not in paths]
    damaged += [Damage(path, what, problem) for path, what, problem in (found.damaged if found else [])]
    heads = files.heads + len(written)
    return ProofCheck(files.files, heads, files.ranges, files.unrecorded, damaged, files.other, files.seconds)
