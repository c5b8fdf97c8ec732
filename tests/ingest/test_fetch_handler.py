"""The fetch Lambda handler: event model in, one core call, typed result out (moto S3 + Secrets Manager)."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest

from icelake.aws.fileio import S3FileIO
from icelake.ingest.landing import list_pending
from tests.ingest.conftest import ApiServer, Reply, SeenRequest

ROOT = Path(__file__).resolve().parents[2]
EVENT = json.loads((Path(__file__).parent / "events" / "fetch.json").read_text())


@dataclass
class Context:
    function_name: str = "icelake-fetch"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:icelake-fetch"
    aws_request_id: str = "req-1"


def load_handler() -> ModuleType:
    """Imported from its file, the way Lambda loads `handler.handler` from the function's asset."""
    spec = importlib.util.spec_from_file_location("fetch_handler", ROOT / "lambdas" / "fetch" / "handler.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def lambda_env(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAW_ROOT", "s3://raw-bucket/lake")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "icelake-test")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "ingest")
    boto3.client("s3").create_bucket(Bucket="raw-bucket")
    boto3.client("secretsmanager").create_secret(Name="crm/api-token", SecretString='{"token": "t0k"}')


@pytest.mark.usefixtures("lambda_env")
def test_two_runs_land_two_batches_then_completing_them_empties_the_pending_list(
    api: ApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [{"id": i, "updated_at": 1} for i in range(5)]

    def behaviour(req: SeenRequest, _n: int) -> Reply:
        page, size = int(req.query["page"]), int(req.query["per_page"])
        return Reply(body=json.dumps({"data": records[(page - 1) * size : page * size]}).encode())

    api.behaviour = behaviour
    event: dict[str, Any] = json.loads(json.dumps(EVENT))
    event["fetch"]["url"] = api.url + "/customers"
    module = load_handler()
    # When the fetch step runs twice (the first run's merge never happened)
    first = module.handler(event, Context())
    second = module.handler(event, Context())
    # Then both batches are pending, oldest first, with their records and the credential sent
    assert first["record_count"] == 5 and first["requests"] == 3
    assert second["pending"] == [first["batch_uri"], second["batch_uri"]] and second["pending_count"] == 2
    assert {r.headers["authorization"] for r in api.requests} == {"Bearer t0k"}
    assert second["batch_uri"].startswith("s3://raw-bucket/lake/raw/crm/customers/")
    emitted = capsys.readouterr().out
    assert '"RecordsFetched":[5.0]' in emitted.replace(" ", "") or '"RecordsFetched":5' in emitted.replace(
        " ", ""
    )
    # When the workflow marks them complete
    done = module.complete_handler({"batch_uris": second["pending"]}, Context())
    assert done["completed"] == second["pending"]
    assert list_pending(S3FileIO(boto3.client("s3")), "s3://raw-bucket/lake", "crm", "customers") == []


@pytest.mark.usefixtures("lambda_env")
# A failed invocation publishes no metric; Powertools warns about that, which is expected here.
@pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
def test_an_invalid_event_is_rejected_before_any_request(api: ApiServer) -> None:
    module = load_handler()
    with pytest.raises(ValueError, match="fetch"):
        module.handler({"source": "crm"}, Context())
    assert api.requests == []


@pytest.mark.usefixtures("lambda_env")
def test_a_long_source_pages_across_invocations_and_the_next_run_asks_since_the_merged_watermark(
    api: ApiServer,
) -> None:
    records = [{"id": i, "updated_at": 100 + i} for i in range(7)]

    def behaviour(req: SeenRequest, _n: int) -> Reply:
        since = int(req.query.get("updated_after", "0"))
        page, size = int(req.query["page"]), int(req.query["per_page"])
        live = [r for r in records if r["updated_at"] >= since]
        return Reply(body=json.dumps({"data": live[(page - 1) * size : page * size]}).encode())

    api.behaviour = behaviour
    event: dict[str, Any] = json.loads(json.dumps(EVENT))
    event["fetch"].update(
        url=api.url + "/customers",
        full_load=False,
        max_pages_per_invocation=1,
        watermark={"param": "updated_after", "from_column": "updated_at", "overlap": 2},
    )
    event["fetch"]["pagination"]["page_size"] = 3
    module = load_handler()
    io = S3FileIO(boto3.client("s3"))

    def run() -> list[dict[str, Any]]:
        """What the state machine does: Fetch, then NextPage -> Fetch while `more`."""
        outputs = [module.handler(event, Context())]
        while outputs[-1]["more"]:
            assert list_pending(io, "s3://raw-bucket/lake", "crm", "customers") == []  # not pending yet
            outputs.append(module.handler({**event, "cursor": outputs[-1]["cursor"]}, Context()))
        return outputs

    first = run()
    # 7 records, 3 per page: pages 1, 2, 3 in three invocations, one batch (one run id)
    assert [o["more"] for o in first] == [True, True, False]
    assert len({o["batch_id"] for o in first}) == 1 and first[-1]["record_count"] == 7
    assert first[-1]["pending_count"] == 1 and "updated_after" not in api.requests[0].query
    module.complete_handler({"batch_uris": first[-1]["pending"]}, Context())
    # The merged batch's newest updated_at (106) minus the overlap (2) is what the next run asks for
    api.requests.clear()
    second = run()
    assert {r.query["updated_after"] for r in api.requests} == {"104"}
    assert second[-1]["record_count"] == 3 and len(second) == 2  # a full page, then an empty one
