"""The ingestion workflow definition: valid, fully connected, and consistent with the code it calls."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from glue_jobs import scd2_merge
from icelake.ingest.models import FetchConfig, Scd2Spec

ROOT = Path(__file__).resolve().parents[2]
ASL_TEXT = (ROOT / "statemachines" / "ingest_source.asl.json").read_text()
ASL: dict[str, Any] = json.loads(ASL_TEXT)
EVENT = json.loads((Path(__file__).parent / "events" / "fetch.json").read_text())
PLACEHOLDERS = {
    "FetchFunctionArn",
    "CompleteFunctionArn",
    "MergeJobName",
    "SnapshotRetentionDays",
    "SnapshotRetainLast",
    "OrphanRetentionHours",
    "CompactDeleteFileThreshold",
    "CompactTargetFileSizeBytes",
}


def targets(state: dict[str, Any]) -> list[str]:
    found = [state[k] for k in ("Next", "Default") if k in state]
    found += [c["Next"] for c in state.get("Choices", [])]
    found += [c["Next"] for c in state.get("Catch", [])]
    return found


def test_every_state_is_reachable_and_every_target_exists() -> None:
    states = ASL["States"]
    seen, todo = set(), [ASL["StartAt"]]
    while todo:
        name = todo.pop()
        assert name in states, f"transition to missing state {name}"
        if name not in seen:
            seen.add(name)
            todo += targets(states[name])
    assert seen == set(states)
    for name, state in states.items():
        assert state["Type"] in ("Succeed", "Fail") or targets(state), f"{name} leads nowhere"
    order = ["Fetch", "AnythingPending", "MergeScd2", "MarkComplete", "Maintenance", "Done"]
    assert [s for s in order if s in seen] == order
    # A long source loops: Fetch -> MorePages -> NextPage (the cursor) -> Fetch
    assert states["Fetch"]["Next"] == "MorePages" and states["NextPage"]["Next"] == "Fetch"
    assert states["NextPage"]["Parameters"]["cursor.$"] == "$.fetched.cursor"
    # A quarantined batch fails the execution (the alarm) after the others were merged and maintained
    assert states["Maintenance"]["Next"] == "AnyQuarantined"
    assert states["AnyQuarantined"]["Choices"][0]["Next"] == "BatchQuarantined"


def test_placeholders_are_quoted_and_exactly_the_documented_set() -> None:
    found = set(re.findall(r"\$\{(\w+)\}", ASL_TEXT))
    assert found == PLACEHOLDERS
    assert not re.search(r"[^\"]\$\{\w+\}[^\"]", ASL_TEXT), "every placeholder must be a whole JSON string"


def test_tasks_call_the_services_the_workflow_needs() -> None:
    states = ASL["States"]
    assert states["Fetch"]["Resource"] == "arn:aws:states:::lambda:invoke"
    assert states["MergeScd2"]["Resource"] == "arn:aws:states:::glue:startJobRun.sync"
    assert states["Maintenance"]["Resource"] == "arn:aws:states:::glue:startJobRun.sync"
    assert states["MarkComplete"]["Parameters"]["Payload"] == {"batch_uris.$": "$.fetched.pending"}


def test_glue_arguments_are_the_ones_the_glue_script_accepts() -> None:
    # The event's sample input is valid for both models the workflow forwards
    FetchConfig.model_validate(EVENT["fetch"])
    spec = Scd2Spec.model_validate(EVENT["table"])
    for state in ("MergeScd2", "Maintenance"):
        arguments = ASL["States"][state]["Parameters"]["Arguments"]
        argv: list[str] = []
        for key, value in arguments.items():
            name = key.removesuffix(".$")
            sample = {"--spec": spec.model_dump_json(), "--batch_uris": '["s3://b/raw/s/e/r"]'}.get(
                name, value
            )
            argv += [name, "3" if str(sample).startswith("${") else str(sample)]
        parsed = scd2_merge.parse_args(argv)
        for key in arguments:
            attribute = key.removesuffix(".$").lstrip("-")
            assert getattr(parsed, attribute) not in (None, ""), (
                f"{state}: {key} is not read by the Glue script"
            )
