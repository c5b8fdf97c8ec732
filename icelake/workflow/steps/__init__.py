"""The steps of statemachines/migrate_tables.asl.json, one module each (one Lambda each).

Every step is `step(input, deps) -> output`: its input model (icelake/workflow/inputs.py) is what
the ASL sends, `Deps` is everything it touches besides (settings, the orchestrator's session, the
ledger, the artifacts bucket). Cross-account work assumes the source role (read) and the target
role (write) inside the step; the orchestrator's own credentials only touch the artifacts bucket,
the ledger, events and Step Functions.
"""

from icelake.request.deps import Deps, Sessions
from icelake.request.selection import parse_request
from icelake.workflow.steps.assessing import assess
from icelake.workflow.steps.copying import copy
from icelake.workflow.steps.inventorying import inventory
from icelake.workflow.steps.planning import plan
from icelake.workflow.steps.registering import register
from icelake.workflow.steps.repairing import repair, verify_or_repair
from icelake.workflow.steps.reporting import report
from icelake.workflow.steps.rolling_back import rollback
from icelake.workflow.steps.validating import validate
from icelake.workflow.steps.verifying import verify

__all__ = [
    "Deps",
    "Sessions",
    "assess",
    "copy",
    "inventory",
    "parse_request",
    "plan",
    "register",
    "repair",
    "report",
    "rollback",
    "validate",
    "verify",
    "verify_or_repair",
]
