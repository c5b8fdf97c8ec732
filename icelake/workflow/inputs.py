"""What each step of statemachines/migrate_tables.asl.json receives and returns: the typed other
side of the ASL's `Payload` blocks and JSONPaths.

Inputs forbid unknown fields, so a field the ASL renames or adds fails at the step's first line
with the field named, and `tests/unit/test_step_contract.py` checks every `Payload` and every
JSONPath of the definition against these models before anything runs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from icelake.migrate.models import MigrationResult
from icelake.request.models import WorkItem
from icelake.workflow.models import (
    AssessResult,
    InventoryResult,
    PlanResult,
    RunSummary,
    TableOutcome,
)


class _StepInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InventoryInput(_StepInput):
    """From the state machine: the execution's input is the request (validated by inventory,
    after the run id defaults to the execution's name)."""

    request: dict[str, Any]
    execution_name: str | None = None
    execution_arn: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_request(cls, data: Any) -> Any:
        """A request sent straight to the Lambda (console, CLI) rather than by the state machine."""
        if isinstance(data, dict) and not isinstance(data.get("request"), dict):
            return {"request": data}
        return data


class PlanInput(_StepInput):
    item: WorkItem


class VerifyInput(_StepInput):
    """Verify (modes verify and repair): the work item; called again once the Glue job checked the
    table's files, with the job run's answer, or the Catch's {Error, Cause}, as `glue`."""

    item: WorkItem
    glue: dict[str, Any] | None = None


class VerifyStep(BaseModel):
    """The Verify step's answer: the table's outcome, or, when the Glue job checks its files
    (`engine` glue), the check it is given (icelake/migrate/check/verify_job.py)."""

    model_config = ConfigDict(frozen=True)

    engine: Literal["lambda", "glue"]
    engine_rule: str  # which rule chose it (icelake/assess/estimate/verify_estimate.py)
    outcome: TableOutcome | None = None
    job_uri: str | None = None  # the VerifyJob the Glue job reads


class PlannedInput(_StepInput):
    """Copy, Register and Validate: the plan, which carries the work item."""

    plan: PlanResult


class CaughtError(BaseModel):
    """What a Catch puts in the state ({Error, Cause}), and `Step` when the ASL names the step that
    failed (ValidationFailed sets it to Validate)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    error: str | None = Field(default=None, alias="Error")
    cause: str | None = Field(default=None, alias="Cause")
    step: str | None = Field(default=None, alias="Step")


class RollbackInput(_StepInput):
    item: WorkItem
    plan: PlanResult | None = None  # None when Plan itself failed
    error: CaughtError | None = None  # the Catch's, when a step failed


class WriterDetails(BaseModel):
    """Where a Distributed Map's ResultWriter put its manifest.json."""

    model_config = ConfigDict(frozen=True, extra="allow")

    bucket: str = Field(alias="Bucket")
    key: str = Field(alias="Key")


class MapResults(BaseModel):
    """The Map's output with a ResultWriter (the rest of it is not read)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    writer: WriterDetails = Field(alias="ResultWriterDetails")


class ReportInput(_StepInput):
    run_id: str
    map_results: MapResults | None = None
    worklist_bucket: str | None = None
    worklist_key: str | None = None
    outcomes: list[TableOutcome] = []  # inline outcomes (tests and small runs)
    assess: bool = False  # mode "assess": write the run's assessment from its tables' assessments


class RegisterResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    table: str
    metadata_location: str


# Lambda step -> (input model, output model); the ASL's ${<Step>FunctionArn} names the step.
STEPS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "inventory": (InventoryInput, InventoryResult),
    "plan": (PlanInput, PlanResult),
    "assess": (PlanInput, AssessResult),
    "copy": (PlannedInput, MigrationResult),
    "register": (PlannedInput, RegisterResult),
    "validate": (PlannedInput, TableOutcome),
    "rollback": (RollbackInput, TableOutcome),
    "report": (ReportInput, RunSummary),
    "verify": (VerifyInput, VerifyStep),
}
