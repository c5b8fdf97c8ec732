"""The embedded AWS's Athena operations the consumer scan reads with (icelake/local/athena_saved.py):
BatchGetNamedQuery and ListPreparedStatements, every request validated by botocore before it is
sent and every raw answer checked member by member against the operation's output shape in
botocore's own model."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError

from tests.lake import Lake
from tests.shapes import BASE_TYPES, check_shape

MODEL = botocore.session.get_session().get_service_model("athena")
_TYPES = {**BASE_TYPES, "timestamp": (int, float)}


def test_saved_queries_answer_in_the_models_shapes(patched_lake: Lake) -> None:
    athena = patched_lake.source.client("athena")
    answers: list[tuple[str, dict[str, Any]]] = []
    athena.meta.events.register(
        "after-call.athena",
        lambda **kw: (
            answers.append((kw["model"].name, json.loads(kw["http_response"].content or b"{}")))
            if kw["http_response"].status_code == 200
            else None
        ),
    )
    # Given named queries in two workgroups and prepared statements in one
    athena.create_work_group(Name="analysts", Configuration={})
    ids = [
        athena.create_named_query(
            Name=f"q{i}", Database="sales", QueryString=f"SELECT {i} FROM sales.orders"
        )["NamedQueryId"]
        for i in range(3)
    ]
    other = athena.create_named_query(
        Name="theirs", Database="sales", QueryString="SELECT 1", WorkGroup="analysts", Description="d"
    )["NamedQueryId"]
    for name in ("b_daily", "a_weekly"):
        athena.create_prepared_statement(
            StatementName=name, WorkGroup="analysts", QueryStatement="SELECT * FROM sales.orders WHERE id = ?"
        )

    # When they are read in bulk
    got = athena.batch_get_named_query(NamedQueryIds=[*ids, other, "no-such-id"])
    first = athena.list_prepared_statements(WorkGroup="analysts", MaxResults=1)
    second = athena.list_prepared_statements(WorkGroup="analysts", MaxResults=1, NextToken=first["NextToken"])

    # Then each query comes back whole, the unknown id unprocessed, the statements paged in name order
    by_id = {q["NamedQueryId"]: q for q in got["NamedQueries"]}
    assert set(by_id) == {*ids, other}
    assert (
        by_id[ids[1]]["QueryString"] == "SELECT 1 FROM sales.orders"
        and by_id[ids[1]]["WorkGroup"] == "primary"
    )
    assert by_id[other]["WorkGroup"] == "analysts" and by_id[other]["Description"] == "d"
    assert [u["NamedQueryId"] for u in got["UnprocessedNamedQueryIds"]] == ["no-such-id"]
    names = [s["StatementName"] for s in first["PreparedStatements"] + second["PreparedStatements"]]
    assert names == ["a_weekly", "b_daily"] and "NextToken" not in second
    assert athena.list_prepared_statements(WorkGroup="primary")["PreparedStatements"] == []
    with pytest.raises(ClientError, match="InvalidRequestException"):
        athena.list_prepared_statements(WorkGroup="nobody")
    with pytest.raises(ClientError, match="InvalidRequestException"):
        athena.batch_get_named_query(NamedQueryIds=[f"id{i}" for i in range(51)])
    # ... and every answer of the added operations, raw, is in its operation's output shape
    added = [
        (name, body) for name, body in answers if name in ("BatchGetNamedQuery", "ListPreparedStatements")
    ]
    assert len(added) == 4
    for name, body in added:
        check_shape(MODEL.operation_model(name).output_shape, body, name, _TYPES)
