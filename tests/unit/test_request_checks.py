"""Every field of a migration request is checked when it is parsed (issue 44): each hostile
request of tests/hostile_requests.py is refused by the model in one line that names the field and
says what a valid one looks like; the valid ones, and those only the catalogs can refuse, parse."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import pytest

from icelake.errors import InvalidRequestError
from icelake.local.lake import SOURCE_ACCOUNT, SOURCE_ROLE, TARGET_ACCOUNT, TARGET_BUCKET, TARGET_ROLE
from icelake.request.selection import parse_request
from tests.hostile_requests import BY_THE_CATALOGS, REFUSED, S3TABLES_REFUSED, VALID, Edit

BASE: dict[str, Any] = {
    "run_id": "hostile-1",
    "source": {"account_id": SOURCE_ACCOUNT, "role_arn": SOURCE_ROLE},
    "target": {
        "account_id": TARGET_ACCOUNT,
        "role_arn": TARGET_ROLE,
        "bucket": TARGET_BUCKET,
        "prefix": "warehouse",
        "kms_key_id": "arn:aws:kms:us-east-1:222222222222:key/5d2a3e9b-1c1e-4f3a-9d6e-3f1b2c3d4e5f",
    },
    "selection": {"databases": ["sales"]},
    "options": {"concurrency": 2, "validation": "rows"},
}


def _edited(edit: Edit) -> dict[str, Any]:
    request = deepcopy(BASE)
    edit(request)
    return request


def test_there_are_at_least_40_hostile_cases() -> None:
    assert len(REFUSED) + len(BY_THE_CATALOGS) >= 40


ALL_REFUSED = REFUSED + S3TABLES_REFUSED[3:]  # REFUSED holds the first three


@pytest.mark.parametrize(("edit", "says"), [c[1:] for c in ALL_REFUSED], ids=[c[0] for c in ALL_REFUSED])
def test_a_hostile_request_is_refused_in_one_line_naming_the_field(edit: Edit, says: str) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        parse_request(_edited(edit))
    message = str(refused.value)
    assert says in message and "\n" not in message, message
    assert message.startswith("malformed migration request: ") and "Value error" not in message


@pytest.mark.parametrize(
    "edit", [c[1] for c in BY_THE_CATALOGS + VALID], ids=[c[0] for c in BY_THE_CATALOGS + VALID]
)
def test_a_valid_request_parses(edit: Edit) -> None:
    assert parse_request(_edited(edit)).run_id == "hostile-1"
