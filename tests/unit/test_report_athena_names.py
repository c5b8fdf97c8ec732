"""A run into S3 Tables names each table as analysts type it in Athena: the outcome carries it
(workflow/steps/shared.item_facts) and report.html lists it; a Glue target's outcome has none."""

from __future__ import annotations

from icelake.assess.pages.render import render_report
from icelake.request.models import WorkItem
from icelake.workflow.models import TableOutcome
from icelake.workflow.steps.shared import item_facts
from tests.work_items import orders_item


def _item(event: str) -> WorkItem:
    return orders_item(event, "s3://somewhere/migrated_sales/orders")


def test_an_s3_tables_outcome_names_the_table_as_athena_reads_it_and_the_report_lists_it() -> None:
    # Given an outcome of a table migrated into the table bucket `lake` of the example request
    facts = item_facts(_item("migrate_request_s3tables.json"))
    outcome = TableOutcome(run_id="r", table="sales.orders", status="migrated", **facts)

    # Then it carries the federated catalog's name, and report.html shows it in its own section
    assert outcome.athena_name == "s3tablescatalog/lake.migrated_sales.orders"
    html = render_report({"run_id": "r", "status": "SUCCEEDED", "tables": [outcome.model_dump(mode="json")]})
    shown = html.replace("<wbr>", "")  # cells may wrap after dots, underscores and slashes
    assert 'id="athena-names"' in html and "s3tablescatalog/lake.migrated_sales.orders" in shown


def test_a_glue_outcome_has_no_athena_name_and_the_report_no_such_section() -> None:
    facts = item_facts(_item("migrate_request.json"))
    outcome = TableOutcome(run_id="r", table="sales.orders", status="migrated", **facts)
    assert outcome.athena_name is None
    html = render_report({"run_id": "r", "status": "SUCCEEDED", "tables": [outcome.model_dump(mode="json")]})
    assert 'id="athena-names"' not in html
