"""Nothing skipped silently (icelake/assess/consumers/): a listing the role may not call is listed
unread with the permission it lacks, another refusal with its code, and the other kinds are still
read. The answers are AWS's error documents as botocore parses them (its Stubber answers the
client's calls; no AWS is reached)."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber

from icelake.assess.consumers.athena import scan_workgroups
from icelake.assess.consumers.context import ScanContext
from icelake.assess.consumers.glue import scan_crawlers, scan_jobs
from icelake.assess.consumers.refs import Selected, SelectedTable

TABLE = SelectedTable(
    "sales.orders", "v2_sales.orders", "s3://src/lake/sales/orders", "s3://dst/w/v2_sales/orders"
)


def test_a_denied_listing_names_its_permission_and_the_rest_is_still_read() -> None:
    session = boto3.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="eu-west-1")
    ctx = ScanContext(session=session, account="111111111111", region="eu-west-1", selected=Selected([TABLE]))
    glue, athena = session.client("glue"), session.client("athena")
    ctx._clients.update(glue=glue, athena=athena)
    with Stubber(glue) as g, Stubber(athena) as a:
        g.add_client_error(
            "get_jobs", "AccessDeniedException", "not authorized to perform: glue:GetJobs", 400
        )
        crawler = {
            "Name": "orders-crawler",
            "Targets": {"S3Targets": [{"Path": "s3://src/lake/sales/orders/"}]},
        }
        g.add_response("get_crawlers", {"Crawlers": [crawler]})
        a.add_response("list_work_groups", {"WorkGroups": [{"Name": "primary"}]})
        a.add_client_error("list_named_queries", "InvalidRequestException", "workgroup is disabled", 400)
        a.add_response("list_prepared_statements", {"PreparedStatements": []})
        scan_jobs(ctx)
        scan_crawlers(ctx)
        scan_workgroups(ctx)
        g.assert_no_pending_responses()
        a.assert_no_pending_responses()

    unread = {(u.consumer.kind, u.what): (u.error, u.permission) for u in ctx.unread}
    assert unread == {
        ("glue_job", "every Glue job"): ("AccessDenied", "glue:GetJobs"),
        ("athena_named_query", "the named queries of workgroup primary"): ("InvalidRequestException", None),
    }
    (found,) = ctx.references
    assert (found.consumer.name, found.where, found.becomes) == (
        "orders-crawler",
        "target S3Targets[0].Path",
        "s3://dst/w/v2_sales/orders/",
    )
    assert found.consumer.arn == "arn:aws:glue:eu-west-1:111111111111:crawler/orders-crawler"
