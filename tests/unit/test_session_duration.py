"""The assumed-role session duration: its bounds, its refresh windows, and how it travels from the
request, the Glue job's arguments and the CLI to the roles each process assumes. No AWS calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glue_jobs import migrate_table as glue_job
from icelake.aws.fileio import FileIOSpec
from icelake.aws.session import (
    DEFAULT_SESSION_SECONDS,
    AssumedRole,
    check_session_duration,
    refresh_windows,
)
from icelake.cli import app
from icelake.errors import SessionDurationError
from icelake.migrate.copy.distributed import executor_spec
from icelake.request.models import MigrationRequest, Options, WorkItem
from icelake.workflow.steps import Sessions

SOURCE_ROLE = "arn:aws:iam::111111111111:role/icelake-source-read"
TARGET_ROLE = "arn:aws:iam::222222222222:role/icelake-target-write"
EVENTS = Path(__file__).parents[1] / "events"


@pytest.fixture(autouse=True)
def _no_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Anything that tried to reach AWS would fail at once on a closed local port."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def _request(**options: object) -> MigrationRequest:
    body = json.loads((EVENTS / "migrate_request.json").read_text())
    body["source"] = {"account_id": "111111111111", "role_arn": SOURCE_ROLE, "external_id": "src-ext"}
    body["target"] = {**body["target"], "role_arn": TARGET_ROLE, "external_id": "dst-ext"}
    body["options"] = {**body.get("options", {}), **options}
    return MigrationRequest.model_validate({"run_id": "r1", **body})


@pytest.mark.parametrize("seconds", [900, 1800, 3600])
def test_durations_sts_accepts_pass(seconds: int) -> None:
    assert check_session_duration(seconds) == seconds
    assert Options(session_duration_seconds=seconds).session_duration_seconds == seconds


@pytest.mark.parametrize("seconds", [-1, 0, 899, 3601, 43200, 86400])
def test_durations_sts_refuses_are_named_with_their_option(seconds: int) -> None:
    # 3601..43200 is what a role's MaxSessionDuration allows, but not a chained role session
    with pytest.raises(
        SessionDurationError,
        match=rf"^--session-duration must be between 900 and 3600 seconds, got {seconds}: .*chained",
    ):
        check_session_duration(seconds, "--session-duration")
    with pytest.raises(ValueError, match=r"session_duration_seconds must be between 900 and 3600"):
        Options(session_duration_seconds=seconds)


def test_default_duration_is_one_hour() -> None:
    assert DEFAULT_SESSION_SECONDS == Options().session_duration_seconds == 3600


@pytest.mark.parametrize("seconds", [900, 1800, 3600])
def test_credentials_are_renewed_well_before_they_expire_but_not_at_once(seconds: int) -> None:
    advisory, mandatory = refresh_windows(seconds)
    # renewal starts before the forced window, and a fresh session is used for most of its life
    assert 0 < mandatory < advisory <= seconds / 4
    assert advisory <= 15 * 60 and mandatory <= 10 * 60


def test_workflow_steps_assume_each_role_with_the_requested_duration() -> None:
    sessions = Sessions(_request(session_duration_seconds=1800))
    assert sessions.role("src") == AssumedRole(
        SOURCE_ROLE, external_id="src-ext", session_name="icelake-src-r1", duration_seconds=1800
    )
    assert sessions.role("dst") == AssumedRole(
        TARGET_ROLE, external_id="dst-ext", session_name="icelake-dst-r1", duration_seconds=1800
    )


def _work_item(request: MigrationRequest) -> str:
    return WorkItem(
        run_id="r1",
        source_database="db",
        source_table="t",
        source_metadata_location="s3://source-lake/db/t/metadata/00001.metadata.json",
        target_database="db",
        target_table="t",
        target_location="s3://target-lake/db/t",
        request=request,
    ).model_dump_json()


def test_glue_job_takes_duration_and_external_ids_from_the_work_item() -> None:
    item = _work_item(_request(session_duration_seconds=2400))
    base = ["--source-metadata", "s3://source-lake/db/t/metadata/00001.metadata.json"]
    base += ["--target-location", "s3://target-lake/db/t", "--work-item", item]

    args = glue_job.parse_args(base)
    assert (args.source_external_id, args.target_external_id) == ("src-ext", "dst-ext")
    assert args.session_duration_seconds == "2400"
    # an explicit argument wins over the work item
    assert (
        glue_job.parse_args([*base, "--session-duration-seconds", "1800"]).session_duration_seconds == "1800"
    )


def test_glue_job_refuses_a_bad_duration_before_starting_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_spark(_warehouse: str | None) -> None:
        raise AssertionError("Spark started before the arguments were checked")

    monkeypatch.setattr(glue_job, "build_session", no_spark)
    argv = ["--source-metadata", "s3://a/m.json", "--target-location", "s3://b/t"]
    argv += ["--target-role-arn", TARGET_ROLE, "--session-duration-seconds", "50000"]
    with pytest.raises(SessionDurationError, match="--session-duration-seconds must be between 900 and 3600"):
        glue_job.main(argv)


def test_cli_refuses_a_bad_duration_in_one_line_naming_the_flag() -> None:
    result = CliRunner().invoke(
        app,
        [
            "migrate",
            "path",
            "--metadata",
            "s3://a/t/metadata/v1.metadata.json",
            "--target-location",
            "s3://b/t",
            "--target-role",
            TARGET_ROLE,
            "--session-duration",
            "60",
        ],
    )
    assert result.exit_code == 2
    assert "--session-duration must be between 900 and 3600 seconds" in result.output
    assert "got 60" in result.output and "cannot assume role" not in result.output


def test_executor_spec_in_aws_carries_the_role_and_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a driver talking to AWS itself (no endpoint override)
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    role = AssumedRole(TARGET_ROLE, external_id="x", session_name="icelake-dst-r1", duration_seconds=1800)

    # When it builds the spec it ships to executors
    spec = executor_spec("s3://target-lake/db/t", role, kms_key_id="k")

    # Then the executors get what they need to assume the role with their own credentials, and no
    # secret; each bucket's requests go to that bucket's own region (source and target may differ)
    assert spec == FileIOSpec("s3", kms_key_id="k", region="us-east-1", role=role, regional=True)
    assert spec.credentials is None
    with pytest.raises(ValueError, match="not both"):
        FileIOSpec.for_uri("s3://target-lake/db/t", Sessions(_request()).orchestrator, role=role)
