"""Step Functions state machines (each state's own fields, nested states by their path) and
Lambda functions (their environment variables)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from icelake.assess.consumers.context import Listing, ScanContext, leaves
from icelake.assess.consumers.model import Consumer, Unread

STATE_MACHINES = Listing(
    "the state machines", "states:ListStateMachines", "stepfunctions", "list_state_machines", "stateMachines"
)
FUNCTIONS = Listing("the functions", "lambda:ListFunctions", "lambda", "list_functions", "Functions")
_NESTED = ("Branches", "Iterator", "ItemProcessor")  # a state's own states: walked as states


def scan_state_machines(ctx: ScanContext) -> None:
    machines = ctx.listed(Consumer(kind="state_machine", name="*"), STATE_MACHINES)
    ctx.each(machines, lambda m: _machine(ctx, m))


def _machine(ctx: ScanContext, summary: dict[str, Any]) -> None:
    consumer = Consumer(kind="state_machine", name=summary["name"], arn=summary["stateMachineArn"])
    sfn = ctx.client("stepfunctions")
    described = ctx.attempt(
        consumer,
        "its definition",
        f"states:DescribeStateMachine on {consumer.arn}",
        lambda: sfn.describe_state_machine(stateMachineArn=consumer.arn),
    )
    if described is None:
        return
    ctx.counted(consumer)
    definition = described.get("definition", "")
    try:
        parsed = json.loads(definition)
    except ValueError:
        ctx.scan(consumer, "definition", definition, lines=True)  # not JSON: placed by line
        return
    for where, state in _states(parsed.get("States") or {}, ""):
        own = {k: v for k, v in state.items() if k not in _NESTED}
        for path, text in leaves(own):
            ctx.scan(consumer, f"state {where} ({path})", text)


def _states(states: dict[str, Any], outer: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, state) of every state, a nested one named by its path: `Map > Inner`."""
    for name, state in states.items():
        where = f"{outer} > {name}" if outer else name
        if not isinstance(state, dict):
            continue
        yield where, state
        for inner in [*(state.get("Branches") or []), state.get("Iterator"), state.get("ItemProcessor")]:
            if isinstance(inner, dict):
                yield from _states(inner.get("States") or {}, where)


def scan_functions(ctx: ScanContext) -> None:
    functions = ctx.listed(Consumer(kind="lambda_function", name="*"), FUNCTIONS)
    for function in functions:
        consumer = Consumer(
            kind="lambda_function", name=function["FunctionName"], arn=function["FunctionArn"]
        )
        environment = function.get("Environment") or {}
        error = environment.get("Error")
        if error:  # values under a KMS key the role may not use
            ctx.not_read(_env_unread(consumer, error, function.get("KMSKeyArn")))
            continue
        ctx.counted(consumer)
        for name, value in (environment.get("Variables") or {}).items():
            ctx.scan(consumer, f"variable {name}", str(value))


def _env_unread(consumer: Consumer, error: dict[str, Any], key: str | None) -> Unread:
    return Unread(
        consumer=consumer,
        what="its environment variables",
        error=str(error.get("ErrorCode") or "EnvironmentError"),
        permission=f"kms:Decrypt on {key}" if key else "kms:Decrypt",
        message=str(error.get("Message") or ""),
    )
