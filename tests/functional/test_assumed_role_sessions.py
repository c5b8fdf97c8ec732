"""Assumed-role sessions that outlive their STS credentials, against moto's real STS and S3: the
driver's session and an executor's FileIO (opened from a pickled spec) assume the role again when
their credentials near expiry, with the requested DurationSeconds, session name and external id."""

from __future__ import annotations

import os
import pickle
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.credentials import RefreshableCredentials

from icelake.aws.fileio import FileIOSpec, S3FileIO
from icelake.aws.session import AssumedRole, assume_role_session
from icelake.errors import InvalidRequestError, SessionDurationError
from icelake.local.lake import TARGET_ROLE
from icelake.migrate.copy.distributed import executor_spec
from icelake.workflow import steps
from icelake.workflow.inputs import InventoryInput
from icelake.workflow.steps import Sessions
from tests.functional.moto_sts import assumed_roles
from tests.lake import TARGET_BUCKET, Lake


class Clock:
    """The clock refreshable credentials read: real time plus an offset that a test advances."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


def _refreshable(credentials: Any) -> RefreshableCredentials:
    assert isinstance(credentials, RefreshableCredentials)
    return credentials


def _near(moment: datetime, seconds: int) -> bool:
    return (
        abs((moment.astimezone(UTC) - (datetime.now(UTC) + timedelta(seconds=seconds))).total_seconds()) < 60
    )


def _target_object(lake: Lake, key: str) -> bytes:
    body: bytes = lake.target.client("s3").get_object(Bucket=TARGET_BUCKET, Key=key)["Body"].read()
    return body


def test_session_assumes_the_role_again_when_its_credentials_near_expiry(lake: Lake) -> None:
    # Given a 15-minute session in the target account, its credentials read through a clock we move
    session = assume_role_session(
        TARGET_ROLE, session_name="long-copy", external_id="ext-1", duration_seconds=900
    )
    clock = Clock()
    credentials = _refreshable(session.get_credentials())
    credentials._time_fetcher = clock
    s3 = session.client("s3")
    first_key = session.get_credentials().get_frozen_credentials().access_key

    # When it works for a while, well inside the session's life
    s3.put_object(Bucket=TARGET_BUCKET, Key="a", Body=b"1")
    clock.advance(600)
    s3.put_object(Bucket=TARGET_BUCKET, Key="b", Body=b"2")

    # Then it has assumed the role once, with the duration, session name and external id asked for
    [only] = assumed_roles(TARGET_ROLE, "long-copy")
    assert only.external_id == "ext-1" and _near(only.expiration, 900)

    # When the next call comes within the last minutes of the credentials' life
    clock.advance(220)
    s3.put_object(Bucket=TARGET_BUCKET, Key="c", Body=b"3")

    # Then the role was assumed again, once, with the same session name and external id
    assert len(assumed_roles(TARGET_ROLE, "long-copy")) == 2

    # When the renewed credentials are used while fresh, and again after they have expired
    clock.offset = timedelta(0)  # moto issued them just now
    s3.put_object(Bucket=TARGET_BUCKET, Key="d", Body=b"4")
    assert len(assumed_roles(TARGET_ROLE, "long-copy")) == 2
    credentials._expiry_time = datetime.now(UTC) - timedelta(seconds=1)  # as if they had run out
    s3.put_object(Bucket=TARGET_BUCKET, Key="e", Body=b"5")

    # Then only the expired ones were replaced; every call went out with current credentials and
    # still acts in the target account
    recorded = assumed_roles(TARGET_ROLE, "long-copy")
    assert len(recorded) == 3 and {r.external_id for r in recorded} == {"ext-1"}
    new_key = session.get_credentials().get_frozen_credentials().access_key
    assert new_key != first_key and new_key == recorded[-1].access_key_id
    assert [_target_object(lake, k) for k in "abcde"] == [b"1", b"2", b"3", b"4", b"5"]


@pytest.mark.parametrize("seconds", [900, 1800, 3600])
def test_the_requested_duration_reaches_sts(lake: Lake, seconds: int) -> None:
    # Given a migration request asking for sessions of `seconds`
    request = steps.parse_request(lake.request("dur-1", options={"session_duration_seconds": seconds}))

    # When a step opens its target session and uses it
    session = Sessions(request).target
    session.client("s3").head_bucket(Bucket=TARGET_BUCKET)

    # Then STS was asked for that duration: its Expiration is now + duration, and so is the
    # credentials' expiry
    [recorded] = assumed_roles(TARGET_ROLE, "icelake-dst-dur-1")
    assert _near(recorded.expiration, seconds)
    assert _near(_refreshable(session.get_credentials())._expiry_time, seconds)


@pytest.mark.parametrize("seconds", [0, 899, 3601, 43200])
def test_a_duration_sts_would_refuse_is_refused_before_any_aws_call(lake: Lake, seconds: int) -> None:
    # Given a base session that counts every AWS call made through it
    calls: list[str] = []
    base = boto3.Session()
    base.events.register("before-call", lambda event_name, **_: calls.append(event_name))
    before = len(assumed_roles(TARGET_ROLE))

    # When a session, a role for executors or a workflow request asks for that duration
    with pytest.raises(
        match=f"session_duration_seconds must be between 900 and 3600 seconds, got {seconds}: "
        ".*caps such chained sessions at one hour",
    ):
        assume_role_session(TARGET_ROLE, duration_seconds=seconds, base=base)
    with pytest.raises(SessionDurationError, match="session_duration_seconds"):
        AssumedRole(TARGET_ROLE, duration_seconds=seconds)
    with pytest.raises(
        InvalidRequestError, match=r"options\.session_duration_seconds: .*between 900 and 3600"
    ):
        steps.inventory(
            InventoryInput.model_validate(
                lake.request("dur-bad", options={"session_duration_seconds": seconds})
            ),
            lake.deps,
        )

    # Then nothing reached AWS
    assert calls == [] and len(assumed_roles(TARGET_ROLE)) == before


def test_executor_fileio_from_a_pickled_spec_assumes_the_role_itself_and_renews_it(lake: Lake) -> None:
    # Given the spec the Glue driver ships to executors for the target role
    role = AssumedRole(
        TARGET_ROLE, external_id="ext-2", session_name="icelake-dst-exec", duration_seconds=1800
    )
    spec = executor_spec(f"s3://{TARGET_BUCKET}/t", role, kms_key_id=lake.kms_key)

    # Then it carries how to assume the role and, as the driver talks to an emulator, the driver's
    # own credentials to assume it with (never an assumed role's); no secret shows in its repr
    assert spec.role == role and assumed_roles(TARGET_ROLE, "icelake-dst-exec") == []
    assert spec.credentials == {
        "aws_access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
    }
    assert "ext-2" not in repr(spec) and os.environ["AWS_SECRET_ACCESS_KEY"] not in repr(spec)

    # When an executor unpickles and opens it
    shipped: FileIOSpec = pickle.loads(pickle.dumps(spec))
    io = shipped.open()

    # Then the executor assumed the role itself, and reads and writes in the target account
    [first] = assumed_roles(TARGET_ROLE, "icelake-dst-exec")
    assert first.external_id == "ext-2" and _near(first.expiration, 1800)
    assert isinstance(io, S3FileIO) and io.kms_key_id == lake.kms_key
    io.write(f"s3://{TARGET_BUCKET}/t/one", b"one")
    assert io.read(f"s3://{TARGET_BUCKET}/t/one") == b"one" and _target_object(lake, "t/one") == b"one"

    # When its credentials come near their expiry
    clock = Clock()
    _refreshable(io.client._request_signer._credentials)._time_fetcher = clock
    clock.advance(1750)
    io.write(f"s3://{TARGET_BUCKET}/t/two", b"two")

    # Then it assumed the role again on its own and the write went through
    assert len(assumed_roles(TARGET_ROLE, "icelake-dst-exec")) == 2
    assert _target_object(lake, "t/two") == b"two"


def test_spec_without_a_role_ships_static_credentials(lake: Lake) -> None:
    # Given a spec made from a session (no role to assume: e.g. a local run)
    spec = FileIOSpec.for_uri(f"s3://{TARGET_BUCKET}/t", lake.target)

    # When it is opened after a round trip through pickle
    io = pickle.loads(pickle.dumps(spec)).open()

    # Then it uses the session's credentials as they were, without assuming anything
    assert spec.role is None and spec.credentials is not None
    frozen = lake.target.get_credentials().get_frozen_credentials()
    assert spec.credentials["aws_access_key_id"] == frozen.access_key
    before = len(assumed_roles(TARGET_ROLE))
    io.write(f"s3://{TARGET_BUCKET}/t/static", b"s")
    assert _target_object(lake, "t/static") == b"s" and len(assumed_roles(TARGET_ROLE)) == before
