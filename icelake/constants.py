"""Names shared by the CDK app, the embedded AWS and the tests: one place, no drift."""

from __future__ import annotations

ORCHESTRATOR_ACCOUNT_LOCAL = "123456789012"  # moto's default account: its Step Functions only run there
REGION_LOCAL = "us-east-1"
# The regions a price table ships for (icelake/assess/estimate/price_tables/<region>.json); a request
# in mode assess elsewhere names its own (options.prices). tests/unit/test_prices.py holds the two equal.
PRICED_REGIONS = ("eu-west-1", "us-east-1", "us-west-2")
DEFAULT_PRICE_REGION = "us-east-1"  # the price region of a request whose target names none, off AWS

MIGRATE_STATE_MACHINE = "icelake-migrate-tables"
MIGRATE_ASL = "statemachines/migrate_tables.asl.json"
INGEST_STATE_MACHINE = "icelake-ingest-source"
INGEST_ASL = "statemachines/ingest_source.asl.json"

LEDGER_TABLE = "icelake-ledger"
ARTIFACTS_BUCKET = "icelake-artifacts-{account}"
GLUE_MIGRATE_JOB = "icelake-migrate-table"
GLUE_MIGRATE_SCRIPT = "glue_jobs/migrate_table.py"
GLUE_MIGRATE_TIMEOUT_MINUTES = 24 * 60  # what the CDK deploys, and embedded AWS too
EVENT_SOURCE = "icelake"

# Step -> (Lambda function name, handler module path in the repo, ASL placeholder of its ARN).
LAMBDA_STEPS: dict[str, tuple[str, str, str]] = {
    "inventory": ("icelake-inventory", "lambdas/inventory/handler.py", "InventoryFunctionArn"),
    "plan": ("icelake-plan", "lambdas/plan/handler.py", "PlanFunctionArn"),
    "assess": ("icelake-assess", "lambdas/assess/handler.py", "AssessFunctionArn"),
    "copy": ("icelake-copy", "lambdas/copy/handler.py", "CopyFunctionArn"),
    "register": ("icelake-register", "lambdas/register/handler.py", "RegisterFunctionArn"),
    "validate": ("icelake-validate", "lambdas/validate/handler.py", "ValidateFunctionArn"),
    "rollback": ("icelake-rollback", "lambdas/rollback/handler.py", "RollbackFunctionArn"),
    "report": ("icelake-report", "lambdas/report/handler.py", "ReportFunctionArn"),
    "verify": ("icelake-verify", "lambdas/verify/handler.py", "VerifyFunctionArn"),
}

# Step -> (memory MB, timeout s) of its Lambda: what the CDK deploys and what embedded AWS gives the
# same functions, so that local runs are measured against the limits AWS will enforce. Copy does the
# byte copies of small tables and Validate may read rows; the others are metadata work.
STEP_LIMITS: dict[str, tuple[int, int]] = {
    "inventory": (1024, 300),
    "plan": (1024, 300),
    "assess": (3008, 900),  # the plan of a table (mode assess), and the sets that find its blockers
    "copy": (3008, 900),
    "register": (1024, 300),
    "validate": (3008, 900),
    "rollback": (1024, 300),
    "report": (1024, 300),
    "verify": (3008, 900),  # mode verify: Validate's checks of a target, read-only
}

# Environment of every migration Lambda (read once into a settings model).
ENV_LEDGER_TABLE = "ICELAKE_LEDGER_TABLE"
ENV_ARTIFACTS_BUCKET = "ICELAKE_ARTIFACTS_BUCKET"
ENV_EVENT_BUS = "ICELAKE_EVENT_BUS"
