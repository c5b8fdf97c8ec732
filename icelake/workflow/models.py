"""Everything that crosses a Step Functions boundary besides the request and its work items
(icelake/request/models.py): the steps' results, each table's outcome, the run's report."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, field_validator

from icelake.assess.estimate.model import TableEstimate
from icelake.assess.pages.kinds import KindSummary
from icelake.migrate.cutover.stranded import StrandedCommit
from icelake.migrate.models import Orphans
from icelake.objects.model import CatalogObject
from icelake.request.models import WorkItem
from icelake.workflow.failures import TableError, coerced


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InventoryResult(_Frozen):
    run_id: str
    tables: int
    worklist_bucket: str
    worklist_key: str
    concurrency: int
    mode: str = "full"  # the request's: "assess" takes the state machine's assessment branch


class AssessResult(_Frozen):
    """What the Assess step returns for a table (its assessment is kept in the artifacts bucket)."""

    table: str
    blockers: int
    warnings: int
    assessment_key: str


class PlanResult(_Frozen):
    item: WorkItem
    engine: Literal["lambda", "glue", "none"]  # none: already in sync (incremental) or dry run
    # Which rule chose the engine, with its figures (icelake/assess/estimate/engine_choice.py); None: "none".
    engine_rule: str | None = None
    files_planned: int
    bytes_planned: int
    files_to_copy: int
    bytes_to_copy: int
    previous_target_metadata: str | None  # Glue table's metadata_location before this run
    target_table_existed: bool
    # An S3 Tables target: the version token read at Plan, which Register's commit must still find.
    target_version: str | None = None
    # An S3 Tables target: where the prefixes the source keeps outside its location were mapped
    # under the table's (icelake.migrate.plan.target.external_mapped), a line each; Register puts
    # them in the outcome's warnings.
    mapped_outside: list[str] = []
    target_metadata_location: str  # where the copy step will put the current metadata
    journal_key: str  # artifacts key: the target keys this run creates (all rollback may delete)
    journal_uri: str = ""  # the same journal as a URI (the Glue job adds what its own plan creates)
    # Where the table was planned: a table whose snapshot summaries put it over the Glue thresholds
    # is planned by the Glue job (files_* and bytes_* are then the summaries' upper bounds).
    planned_in: Literal["lambda", "glue"] = "lambda"
    copy_result_uri: str  # where the copy step (Lambda or Glue) writes its MigrationResult
    # The Plan step's own account: the S3 requests its clients sent, by kind, and its seconds.
    requests: dict[str, int] = {}
    seconds: float = 0.0
    # What the plan predicts the copy and Validate will send ("copy", "validate" -> requests by
    # kind): with `requests`, the table's estimate in its outcome (empty when the Glue job plans).
    expected_requests: dict[str, dict[str, int]] = {}
    # Of a full plan made in the Plan step: its manifests' entries and the snapshots Validate
    # compares, which the run's estimate times (0: not known, as for a sync or a Glue-planned table).
    manifest_entries: int = 0
    snapshots: int = 0
    # Set when the table is left alone (engine "none"): its outcome and why.
    stopped: Literal["diverged", "source_dropped", "busy", "promoted", "stranded", "failed"] | None = None
    stop_reason: str | None = None
    stop_type: str | None = None  # the error's type when it is not the state (CarryOverRefused)
    # A promoted table: the commits made to its source after promotion (stranded), or in a
    # carry-over those it carries (icelake/workflow/steps/carrying.py).
    stranded: list[StrandedCommit] = []
    orphans: Orphans = Orphans()  # what only older logged versions reach (a table planned here)


OutcomeStatus = Literal[
    "migrated",
    "in_sync",
    "dry_run",
    "promoted",
    "diverged",
    "source_dropped",
    "busy",
    "failed",
    "rolled_back",
    "stranded",
    "verified",
    "damaged",
]
# Outcomes that mean the table is not where the request wanted it (README "Outcome states"): the
# run's failed count, its alarm and the dashboard's failed line (cdk/monitoring.py) read this one tuple.
FAILED_STATUSES: tuple[OutcomeStatus, ...] = (
    "failed",
    "rolled_back",
    "diverged",
    "source_dropped",
    "busy",
    "damaged",
    "stranded",
)
# The CloudWatch metric (namespace icelake) that counts each outcome: the Report Lambda publishes
# them and the dashboard graphs them, from this one table.
OUTCOME_METRICS: dict[str, str] = {
    status: "Tables" + "".join(part.title() for part in status.split("_"))
    for status in get_args(OutcomeStatus)
}
FILES_PRUNED_METRIC = "FilesPruned"


class TableOutcome(_Frozen):
    run_id: str
    table: str
    # diverged: someone else committed to the target table since icelake last registered it;
    # nothing was written and nothing rolled back (see README "Outcome states").
    # source_dropped: the source table no longer exists; its target was left as it is.
    # busy: another run that is still going holds the table; this run left it alone.
    # promoted: a cutover ended with the target as the table's home; every later run reports it
    # and writes nothing.
    # stranded: a promoted table whose source got commits after promotion (`stranded` names them).
    # verified / damaged: mode verify found the target whole / named its missing or changed files.
    status: OutcomeStatus
    target_metadata_location: str | None = None
    files_copied: int = 0
    files_verified: int = 0  # of the copies: checksum equal to the source's (end to end)
    bytes_copied: int = 0
    files_rewritten: int = 0
    files_skipped: int = 0
    snapshots_validated: int = 0
    # What the copy planned: the whole table, or what the source committed since the last sync
    # (icelake.migrate.plan.incremental), and why.
    sync: Literal["full", "incremental"] | None = None
    sync_reason: str | None = None
    validation: str | None = None  # the tier Validate completed, and why it is less than asked
    # Where each phase ran: plan, copy ("lambda" or "glue") and validate ("glue" when the Glue job
    # compared the rows, else "lambda").
    engines: dict[str, str] = {}
    engine_rule: str | None = (
        None  # which rule chose the copy's engine (icelake/assess/estimate/engine_choice.py)
    )
    files_pruned: int = 0  # objects of snapshots the source expired, deleted from the target
    # Files only older logged metadata versions reach, present at the source: copied under
    # options.history "all", else not; `history_note` says which and what to do about them.
    orphans: Orphans = Orphans()
    history_note: str | None = None
    # cutover: the source's last snapshot and the target's current one (equal when promoted)
    source_snapshot_id: int | None = None
    target_snapshot_id: int | None = None
    sync_again: bool = False  # cutover: the source moved during the sync; the state machine loops
    target: str | None = None  # the target table's "database.table"
    # An S3 Tables target as analysts type it in Athena: s3tablescatalog/<bucket>.<namespace>.<table>
    athena_name: str | None = None
    # stranded: the source's commits after promotion, oldest first (at most 200); a carry-over's
    # outcome lists those it refused. carried: the source snapshot ids a carry-over brought.
    stranded: list[StrandedCommit] = []
    carried: list[int] = []
    carried_rows: int = 0
    # verify and repair: the files found damaged or missing; repair: those written again
    # (icelake/migrate/check/proved.py, repair.py).
    damaged_files: list[str] = []
    repaired_files: list[str] = []
    # What the run did not do for this table that someone should know of (an earlier target left
    # in place, a source grant whose principal has no mapping, ...).
    warnings: list[str] = []
    # What went wrong, or why the table was left alone: {type, message, step, hint} and where the
    # step logged it (icelake/workflow/failures.py); never a stack trace.
    error: TableError | None = None
    seconds: float = 0.0
    # The table's own account: S3 requests by kind (copy, list, head, get, put, delete) that the
    # steps' clients sent, each phase's seconds (plan, copy, validate, rollback), and what those
    # cost by the target region's price table (icelake/assess/estimate/cost.py; empty where none ships).
    requests: dict[str, int] = {}
    requests_by_phase: dict[str, dict[str, int]] = {}  # the same requests, by the phase that sent them
    duration_s: dict[str, float] = {}
    cost_usd: dict[str, float] = {}
    # The estimate model applied to this run's own plan (icelake/assess/estimate/model.py): what
    # report.html sets beside the account above. None when the Glue job planned the table.
    estimate: TableEstimate | None = None

    @field_validator("error", mode="before")
    @classmethod
    def _error(cls, value: object) -> object:
        return coerced(value)


RunState = Literal["succeeded", "partial", "failed"]


class RunReport(_Frozen):
    """What the Report step writes to runs/<run_id>/report.json: every table's outcome."""

    run_id: str
    status: RunState
    tables: list[TableOutcome]
    report_uri: str
    report_html_uri: str = ""  # report.html beside it: the same run for people to read
    # Why tables were not migrated and what the run warned of, grouped by kind
    # (icelake/assess/pages/kinds.py): {kind: {count, tables, message, hint}}.
    warnings_by_kind: dict[str, KindSummary] = {}
    blockers_by_kind: dict[str, KindSummary] = {}
    # Every other entry of the selection (views and links carried, tables not moved: icelake/objects/)
    objects: list[CatalogObject] = []
    objects_by_kind: dict[str, int] = {}


class RunSummary(_Frozen):
    """What the Report step returns (the execution's output): small whatever the number of tables."""

    run_id: str
    status: RunState
    tables: int
    counts: dict[str, int]  # TableOutcome.status -> number of tables
    files_pruned: int = 0
    report_uri: str  # the RunReport with every table
    report_html_uri: str = ""
    objects: str = ""  # one line: views carried, tables not moved (objects.model.summary_line)

    def metrics(self) -> dict[str, int]:
        """CloudWatch metric -> value for this run: every outcome (zeros too, so graphs show them)."""
        values = {metric: self.counts.get(status, 0) for status, metric in OUTCOME_METRICS.items()}
        return values | {FILES_PRUNED_METRIC: self.files_pruned}
