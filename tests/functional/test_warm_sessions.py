"""Steps that run one after another in one process (a warm Lambda container) keep their sessions,
against moto's real STS and S3: each role is assumed once per run, not once per step; a kept
session whose credentials expired assumes the role again; another environment or run, or a new
embedded AWS, gets sessions of its own."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from botocore.credentials import RefreshableCredentials

from icelake.aws import warm
from icelake.constants import ENV_ARTIFACTS_BUCKET, ENV_LEDGER_TABLE
from icelake.local.lake import SOURCE_ROLE, TARGET_ROLE
from icelake.local.moto_server import embedded_aws
from icelake.request.deps import Deps
from icelake.workflow import steps
from tests.functional.moto_sts import assumed_roles
from tests.lake import TARGET_BUCKET, Lake


@pytest.fixture
def lambda_env(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The environment a step Lambda reads its settings from."""
    monkeypatch.setenv(ENV_LEDGER_TABLE, lake.env.ledger_table)
    monkeypatch.setenv(ENV_ARTIFACTS_BUCKET, lake.env.artifacts_bucket)
    yield
    warm.forget()


def _step(lake: Lake, run_id: str) -> Deps:
    """What a step does with its sessions: both sides' S3 and the target's Glue, as the Lambda's
    Deps give them; it counts its own S3 requests (one PUT), whatever ran before it."""
    deps = Deps.from_environ()
    sessions = deps.sessions(steps.parse_request(lake.request(run_id)))
    sessions.target_io().write(f"s3://{TARGET_BUCKET}/warm/{run_id}", b"x")
    assert sessions.target_io().stat(f"s3://{TARGET_BUCKET}/warm/{run_id}") is not None
    sessions.source.client("s3").list_buckets()
    sessions.target.client("glue").get_databases()
    counts = sessions.requests.counts()
    # its own requests only: one PUT, one HEAD and each IO's bucket-region lookup (a GET)
    assert counts == {"copy": 0, "list": 0, "head": 1, "get": 2, "put": 1, "delete": 0}, counts
    return deps


def _glue(deps: Deps, lake: Lake, run_id: str) -> object:
    return deps.sessions(steps.parse_request(lake.request(run_id))).target.client("glue")


@pytest.mark.usefixtures("lambda_env")
def test_steps_of_one_run_assume_each_role_once(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    # When three steps of one run go one after another in this process
    first = _step(lake, "warm-1")
    assert _step(lake, "warm-1") is first and _step(lake, "warm-1") is first

    # Then each side's role was assumed once, for that run, its Glue client made once, and the
    # writes landed in the target
    assert _glue(first, lake, "warm-1") is _glue(Deps.from_environ(), lake, "warm-1")
    assert len(assumed_roles(SOURCE_ROLE, "icelake-src-warm-1")) == 1
    assert len(assumed_roles(TARGET_ROLE, "icelake-dst-warm-1")) == 1
    body = lake.target.client("s3").get_object(Bucket=TARGET_BUCKET, Key="warm/warm-1")["Body"].read()
    assert body == b"x"

    # When a step of another run follows: its own role sessions (STS session names carry the run)
    _step(lake, "warm-2")
    assert len(assumed_roles(TARGET_ROLE, "icelake-dst-warm-2")) == 1

    # When the environment changes (another retry setting): another orchestrator session and roles
    monkeypatch.setenv("ICELAKE_AWS_MAX_ATTEMPTS", "3")
    assert _step(lake, "warm-1") is not first
    assert len(assumed_roles(TARGET_ROLE, "icelake-dst-warm-1")) == 2


@pytest.mark.usefixtures("lambda_env")
def test_a_kept_session_with_expired_credentials_assumes_the_role_again(lake: Lake) -> None:
    # Given a run's target session kept by a first step
    deps = _step(lake, "warm-exp")
    kept = deps.sessions(steps.parse_request(lake.request("warm-exp"))).target
    credentials = kept.get_credentials()
    assert isinstance(credentials, RefreshableCredentials)

    # When its credentials run out before the next step
    credentials._expiry_time = datetime.now(UTC) - timedelta(seconds=1)
    _step(lake, "warm-exp")

    # Then that step assumed the role again and its write went through with the new credentials
    recorded = assumed_roles(TARGET_ROLE, "icelake-dst-warm-exp")
    assert len(recorded) == 2
    assert kept.get_credentials().get_frozen_credentials().access_key == recorded[-1].access_key_id


@pytest.mark.usefixtures("lambda_env")
def test_a_new_embedded_aws_gets_new_sessions(lake: Lake) -> None:
    # Given a step's sessions kept in this process
    first = _step(lake, "warm-new")

    # When another embedded AWS starts (its STS never issued the kept credentials)
    with embedded_aws():
        # Then nothing kept from before is handed out
        assert Deps.from_environ() is not first
    assert Deps.from_environ() is not first
