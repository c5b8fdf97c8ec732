"""Athena's saved SQL for the embedded AWS, which moto 5.2.5 stores but cannot list in bulk:
BatchGetNamedQuery (moto has only GetNamedQuery) and ListPreparedStatements (only Create and
Get). Answers follow the service model's shapes in botocore's own JSON (`NamedQuery`,
`UnprocessedNamedQueryId`, `PreparedStatementSummary`); tests/functional/test_consumer_backends.py
checks each against them. The consumer scan (icelake/assess/consumers/athena.py) reads with both.
Installed by icelake/local/embedded.py with its other patches and undone with them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

PAGE = 50  # ListPreparedStatements' MaxResults cap (the service model's range is 1-50)


def batch_get_named_query(self: Any) -> Any:
    ids = list(self._get_param("NamedQueryIds") or [])
    if not 1 <= len(ids) <= 50:
        return _invalid(f"NamedQueryIds holds {len(ids)} ids: give 1 to 50")
    found, missing = [], []
    for query_id in ids:
        query = self.athena_backend.get_named_query(query_id)
        if query is None:
            missing.append(
                {
                    "NamedQueryId": query_id,
                    "ErrorCode": "INVALID_INPUT",
                    "ErrorMessage": f"NamedQuery {query_id} was not found",
                }
            )
            continue
        answer = {
            "Name": query.name,
            "Database": query.database,
            "QueryString": query.query_string,
            "NamedQueryId": query.id,
            "WorkGroup": query.workgroup.name,
        }
        if query.description:
            answer["Description"] = query.description
        found.append(answer)
    return json.dumps({"NamedQueries": found, "UnprocessedNamedQueryIds": missing})


def list_prepared_statements(self: Any) -> Any:
    workgroup = self._get_param("WorkGroup")
    if not self.athena_backend.get_work_group(workgroup):
        return _invalid(f"WorkGroup {workgroup} does not exist")
    statements = sorted(
        (s for s in self.athena_backend.prepared_statements.values() if s.workgroup == workgroup),
        key=lambda s: s.statement_name,
    )
    start = int(self._get_param("NextToken") or 0)
    size = min(int(self._get_param("MaxResults") or PAGE), PAGE)
    page: dict[str, Any] = {
        "PreparedStatements": [
            {"StatementName": s.statement_name, "LastModifiedTime": s.last_modified_time.timestamp()}
            for s in statements[start : start + size]
        ]
    }
    if start + size < len(statements):
        page["NextToken"] = str(start + size)
    return json.dumps(page)


def _invalid(message: str) -> Any:
    return json.dumps({"__type": "InvalidRequestException", "Message": message}), {"status": 400}


def install(replace: Callable[[Any, str, Any], None]) -> None:
    """Add the operations to moto's Athena (`replace(owner, name, value)` records each change so
    that it can be undone). Athena speaks JSON with X-Amz-Target: the action names the method."""
    from moto.athena.responses import AthenaResponse

    for method in (batch_get_named_query, list_prepared_statements):
        replace(AthenaResponse, method.__name__, method)
