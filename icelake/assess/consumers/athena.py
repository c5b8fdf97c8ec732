"""Athena's saved SQL in every workgroup: named queries (BatchGetNamedQuery, 50 at a time) and
prepared statements, each scanned line by line."""

from __future__ import annotations

from functools import partial
from typing import Any

from icelake.assess.consumers.context import Listing, ScanContext
from icelake.assess.consumers.model import Consumer, Unread

BATCH = 50  # BatchGetNamedQuery's most ids a call
WORKGROUPS = Listing("the workgroups", "athena:ListWorkGroups", "athena", "list_work_groups", "WorkGroups")


def _of_workgroup(workgroup: str, arn: str, noun: str, operation: str, key: str) -> Listing:
    """A listing of one workgroup's `noun` (athena:ListNamedQueries for list_named_queries)."""
    action = "".join(part.title() for part in operation.split("_"))
    return Listing(
        f"the {noun} of workgroup {workgroup}", f"athena:{action} on {arn}", "athena", operation, key
    )


def scan_workgroups(ctx: ScanContext) -> None:
    workgroups = ctx.listed(Consumer(kind="athena_named_query", name="*"), WORKGROUPS)
    names = [w["Name"] for w in workgroups]
    ctx.each(names, lambda name: _workgroup(ctx, name))


def _workgroup(ctx: ScanContext, workgroup: str) -> None:
    athena = ctx.client("athena")
    arn = ctx.arn("athena", f"workgroup/{workgroup}")
    queries = Consumer(kind="athena_named_query", name="*", arn=arn, workgroup=workgroup)
    listing = _of_workgroup(workgroup, arn, "named queries", "list_named_queries", "NamedQueryIds")
    ids = ctx.listed(queries, listing, WorkGroup=workgroup)
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        got = ctx.attempt(
            queries,
            f"named queries {', '.join(batch[:3])}{' ...' if len(batch) > 3 else ''} of {workgroup}",
            f"athena:BatchGetNamedQuery on {arn}",
            partial(athena.batch_get_named_query, NamedQueryIds=batch),
        )
        for query in (got or {}).get("NamedQueries", []):
            _named_query(ctx, workgroup, query)
        for failed in (got or {}).get("UnprocessedNamedQueryIds", []):
            ctx.not_read(_unprocessed(queries, failed))
    _prepared_statements(ctx, workgroup, arn)


def _named_query(ctx: ScanContext, workgroup: str, query: dict[str, Any]) -> None:
    consumer = Consumer(
        kind="athena_named_query", name=query["Name"], workgroup=workgroup, id=query.get("NamedQueryId")
    )
    ctx.counted(consumer)
    ctx.scan(consumer, "query", query.get("QueryString", ""), lines=True)


def _unprocessed(queries: Consumer, failed: dict[str, Any]) -> Unread:
    code = str(failed.get("ErrorCode") or "Unprocessed")
    return Unread(
        consumer=queries.model_copy(update={"id": failed.get("NamedQueryId")}),
        what=f"named query {failed.get('NamedQueryId')}",
        error=code,
        permission=f"athena:BatchGetNamedQuery on {queries.arn}" if "denied" in code.lower() else None,
        message=str(failed.get("ErrorMessage") or ""),
    )


def _prepared_statements(ctx: ScanContext, workgroup: str, arn: str) -> None:
    athena = ctx.client("athena")
    listing = Consumer(kind="athena_prepared_statement", name="*", arn=arn, workgroup=workgroup)
    statements = _of_workgroup(
        workgroup, arn, "prepared statements", "list_prepared_statements", "PreparedStatements"
    )
    summaries = ctx.listed(listing, statements, WorkGroup=workgroup)
    for summary in summaries:
        name = summary["StatementName"]
        consumer = Consumer(kind="athena_prepared_statement", name=name, workgroup=workgroup)
        got = ctx.attempt(
            consumer,
            f"prepared statement {name} of workgroup {workgroup}",
            f"athena:GetPreparedStatement on {arn}",
            partial(athena.get_prepared_statement, StatementName=name, WorkGroup=workgroup),
        )
        if got is not None:
            ctx.counted(consumer)
            ctx.scan(consumer, "statement", got["PreparedStatement"].get("QueryStatement", ""), lines=True)
