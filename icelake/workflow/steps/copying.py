"""Copy, for tables small enough for a Lambda; larger ones run glue_jobs/migrate_table.py with the
same plan. The result goes to the artifacts bucket for Validate."""

from __future__ import annotations

from icelake.aws.fileio import io_for
from icelake.migrate.check.record import RECORD_NAME, RecordBuilder, add_to_record
from icelake.migrate.copy.common import CopySettings
from icelake.migrate.copy.engine import migrate_table
from icelake.migrate.models import MigrationResult
from icelake.migrate.settings import EngineSettings
from icelake.request.deps import Artifacts, Deps
from icelake.request.sync import since_of
from icelake.request.target import prefix_maps
from icelake.workflow.inputs import PlannedInput
from icelake.workflow.steps.carrying import carry_copy


def copy(given: PlannedInput, deps: Deps) -> MigrationResult:
    planned = given.plan
    item = planned.item
    sessions = deps.sessions(item.request)
    if item.request.mode == "carry_over":  # a promoted table's stranded appends
        result = carry_copy(planned, deps)
        io_for(planned.copy_result_uri, deps.orchestrator).write(
            planned.copy_result_uri, result.model_dump_json().encode()
        )
        return result
    deps.ledger.record_table(item.run_id, item.name, "COPYING")
    record = RecordBuilder()
    result = migrate_table(
        item.source_metadata_location,
        item.target_location,
        prefix_maps(item),
        src_io=sessions.source_io(),
        dst_io=sessions.target_io(),
        settings=EngineSettings(
            processes=1,
            lock_target=False,
            # A table bucket's table this run's Plan created holds only this run's writes: its
            # storage is not asked about each file (CopySettings.fresh_target; no-op for Glue).
            copy=CopySettings(fresh_target=not planned.target_table_existed),
            history=item.request.options.history,
            since=since_of(item),
            record=record,
        ),
    ).model_copy(update={"requests": sessions.requests.counts()})
    if len(record):  # what this run wrote, and the proof of each (verify and repair read it)
        record_uri = deps.artifacts.uri(Artifacts.key(item.run_id, item.name, RECORD_NAME))
        add_to_record(deps.artifacts.io, record_uri, record)
    io_for(planned.copy_result_uri, deps.orchestrator).write(
        planned.copy_result_uri, result.model_dump_json().encode()
    )
    return result
