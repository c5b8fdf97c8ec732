"""run_execution's wait on the embedded AWS (icelake.local.resources): it looks again as soon as
moto ends the execution, and only then. An execution ARN comes back whenever a run of the same name
starts in a later embedded AWS (each e2e test's "full-1"); the end of the earlier run must not end
the later run's waits, or run_execution asks moto to describe it as fast as it can answer while the
run works (the e2e suite's CPU went from 614 to 716 s with that)."""

from __future__ import annotations

import json
from pathlib import Path

from icelake.local.embedded import create_state_machine, run_execution, start_embedded_aws
from icelake.local.resources import _client

REPO = Path(__file__).resolve().parents[2]
HOLD_S = 1


def _looks_of_one_run(asl: Path, name: str) -> tuple[str, int, float]:
    """(status, describe calls, seconds) of one run of a state machine that waits HOLD_S."""
    with start_embedded_aws(REPO):
        machine = create_state_machine(asl, {}, "t-hold")
        looks: list[str] = []
        sfn = _client("stepfunctions")  # the client run_execution polls with
        sfn.meta.events.register("before-call.sfn.DescribeExecution", lambda **_: looks.append(name))
        result = run_execution(machine, {}, timeout=30, name=name)
        events = result.events
        seconds = (events[-1]["timestamp"] - events[0]["timestamp"]).total_seconds()
        return result.status, len(looks), seconds


def test_a_run_named_as_an_earlier_one_waits_for_its_own_end(tmp_path: Path) -> None:
    asl = tmp_path / "hold.asl.json"
    asl.write_text(
        json.dumps({"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": HOLD_S, "End": True}}})
    )
    first = _looks_of_one_run(asl, "same-name")
    second = _looks_of_one_run(asl, "same-name")  # the same ARN, in a new embedded AWS
    for status, looks, seconds in (first, second):
        assert status == "SUCCEEDED"
        assert seconds >= HOLD_S
        # a poll of 0.1 s growing by half to 0.5 s: about 4 looks in 1 s, and one more at the end
        assert looks <= 12, f"{looks} describes of a {seconds:.1f} s run: the wait did not wait"
