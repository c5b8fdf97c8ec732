"""The ASL and the steps agree before anything runs: every Lambda Task's Payload names exactly
fields of its step's input model (all required ones included), and every JSONPath the item
processor reads resolves to a field of the model that is at that path. A field renamed on one
side fails here, not in an execution."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from icelake.constants import MIGRATE_ASL
from icelake.request.models import WorkItem
from icelake.workflow.inputs import STEPS, CaughtError, VerifyStep
from icelake.workflow.models import PlanResult, TableOutcome

REPO = Path(__file__).resolve().parents[2]
DEFINITION = json.loads((REPO / MIGRATE_ASL).read_text())
ITEM_STATES = DEFINITION["States"]["MigrateTables"]["ItemProcessor"]["States"]
ASSESS_STATES = DEFINITION["States"]["AssessTables"]["ItemProcessor"]["States"]  # mode assess
VERIFY_STATES = DEFINITION["States"]["VerifyTables"]["ItemProcessor"]["States"]  # modes verify, repair
# What the item processor's state holds at its top level, by key, after KeepPlan (and Validate).
ITEM_STATE_SHAPE: dict[str, Any] = {
    "item": WorkItem,
    "plan": PlanResult,
    "planned": {"plan": PlanResult},
    "validated": {"outcome": TableOutcome},
    "error": CaughtError,  # a Catch's {Error, Cause}, and Step
    "rollback_error": dict,
}
# What the verify processor's state holds: the item, the Verify step's answer, the Glue job's.
VERIFY_STATE_SHAPE: dict[str, Any] = {"item": WorkItem, "verified": {"step": VerifyStep}, "glue": dict}


def _lambda_tasks() -> list[tuple[str, str, dict[str, Any]]]:
    """(state, step, payload) of every Lambda Task, top level and in the item processors."""
    found = []
    every = [*DEFINITION["States"].items(), *ITEM_STATES.items(), *ASSESS_STATES.items()]
    for name, state in [*every, *VERIFY_STATES.items()]:
        params = state.get("Parameters", {})
        function = re.fullmatch(r"\$\{(\w+)FunctionArn\}", str(params.get("FunctionName", "")))
        if state["Type"] == "Task" and function:
            found.append((name, function.group(1).lower(), params["Payload"]))
    return found


def test_every_step_the_asl_invokes_has_models() -> None:
    invoked = {step for _state, step, _payload in _lambda_tasks()}
    assert invoked == set(STEPS)


@pytest.mark.parametrize(("state", "step", "payload"), _lambda_tasks(), ids=lambda v: str(v)[:20])
def test_each_payload_is_its_step_input(state: str, step: str, payload: dict[str, Any]) -> None:
    model, _output = STEPS[step]
    keys = {k.removesuffix(".$") for k in payload}
    fields = model.model_fields
    assert keys <= set(fields), f"{state} passes {keys - set(fields)} that {model.__name__} does not have"
    required = {n for n, f in fields.items() if f.is_required()}
    assert required <= keys, f"{state} leaves out {required - keys} that {model.__name__} requires"


def _resolve(shape: Any, path: list[str], where: str) -> None:
    """Walk `path` through dict shapes and pydantic models; fail on a missing field."""
    if not path or shape is dict:
        return
    head, rest = path[0], path[1:]
    if isinstance(shape, dict):
        assert head in shape, f"{where}: nothing puts '{head}' in the state"
        _resolve(shape[head], rest, where)
        return
    assert isinstance(shape, type) and issubclass(shape, BaseModel), (where, shape)
    assert head in shape.model_fields, f"{where}: {shape.__name__} has no field '{head}'"
    annotation = shape.model_fields[head].annotation
    models = [a for a in (typing.get_args(annotation) or (annotation,)) if isinstance(a, type)]
    nested = next((a for a in models if issubclass(a, BaseModel)), None)
    if rest:
        assert nested is not None, f"{where}: {shape.__name__}.{head} has no fields to go into"
        _resolve(nested, rest, where)


def _paths(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [p for v in value.values() for p in _paths(v)]
    if isinstance(value, list):
        return [p for v in value for p in _paths(v)]
    return re.findall(r"(?<![$\w])\$((?:\.\w+)+)", value) if isinstance(value, str) else []


@pytest.mark.parametrize(
    ("states", "shape", "least"),
    [(ITEM_STATES, ITEM_STATE_SHAPE, 20), (VERIFY_STATES, VERIFY_STATE_SHAPE, 6)],
    ids=["migrate", "verify"],
)
def test_every_jsonpath_of_the_item_processor_resolves_to_a_field(
    states: dict[str, Any], shape: dict[str, Any], least: int
) -> None:
    checked = 0
    for name, state in states.items():
        for key in ("Parameters", "Choices", "InputPath", "OutputPath", "ResultPath"):
            for path in _paths(state.get(key)):
                parts = path.strip(".").split(".")
                if key == "ResultPath" or parts[0] == "Payload":
                    continue  # where a result goes, or the Lambda's own answer
                _resolve(shape, parts, f"{name}.{key} ${path}")
                checked += 1
    assert checked >= least  # the Choice on the engine, the Glue arguments, the cutover loop, ...


def test_a_renamed_field_is_caught() -> None:
    # the resolver itself fails on a field no model has
    with pytest.raises(AssertionError, match="has no field 'engine_kind'"):
        _resolve(ITEM_STATE_SHAPE, ["plan", "engine_kind"], "probe")
    with pytest.raises(AssertionError, match="has no field 'sync_later'"):
        _resolve(ITEM_STATE_SHAPE, ["validated", "outcome", "sync_later"], "probe")
