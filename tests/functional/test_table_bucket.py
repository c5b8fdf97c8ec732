"""An S3 Tables target's catalog side (icelake/workflow/table_bucket.py) on the embedded AWS's
S3 Tables: Plan creates the namespace and the table and marks them icelake's, and refuses a table
icelake did not create; Register commits only from the version token read at Plan; Rollback
deletes a table the run created, or puts the earlier pointer back, and leaves a pointer someone
else moved as it is."""

from __future__ import annotations

import pytest

from icelake.aws import s3tables
from icelake.errors import ConcurrentCatalogChangeError, TargetNotOursError
from icelake.local.lake import TARGET_ROLE
from icelake.request.deps import Sessions
from icelake.request.models import MigrationRequest, WorkItem
from icelake.workflow import steps, table_bucket
from icelake.workflow.inputs import InventoryInput, PlanInput, PlannedInput, RollbackInput
from icelake.workflow.steps import planning
from tests.lake import SOURCE_ACCOUNT, TARGET_ACCOUNT, Lake, add_source_table

BUCKET = f"arn:aws:s3tables:us-east-1:{TARGET_ACCOUNT}:bucket/lake"


def _item(lake: Lake, run_id: str, table: str = "orders") -> WorkItem:
    request = MigrationRequest.model_validate(
        lake.request(run_id)
        | {
            "target": {
                "kind": "s3tables",
                "account_id": TARGET_ACCOUNT,
                "role_arn": TARGET_ROLE,
                "table_bucket_arn": BUCKET,
            }
        }
    )
    return WorkItem(
        run_id=run_id,
        source_database="sales",
        source_table=table,
        source_metadata_location=f"s3://source-lake/lake/sales/{table}/metadata/v1.metadata.json",
        target_database="sales",
        target_table=table,
        target_location=f"s3tables://lake/sales/{table}",
        request=request,
    )


def _metadata(location: str, name: str) -> str:
    """A metadata location in the table's storage (the service reads no file to move a pointer)."""
    return f"{location}/metadata/{name}.metadata.json"


def test_plan_creates_and_marks_the_table_and_refuses_one_it_did_not_create(lake: Lake) -> None:
    lake.target.client("s3tables").create_table_bucket(name="lake")
    item = _item(lake, "run-1")
    sessions, ledger = lake.deps.sessions(item.request), lake.deps.ledger

    made = table_bucket.resolve(item, sessions, ledger, create=True)

    # the namespace and the table were created, tagged and marked in the ledger; the item's
    # location is now the table's storage
    assert (made.existed, made.previous) == (False, None) and made.version
    found = s3tables.find(table_bucket.client(sessions), table_bucket.table_ref(item))
    assert found is not None and made.item.target_location == found.warehouse_location
    assert found.owner == f"{SOURCE_ACCOUNT}:sales.orders"
    mark = ledger.owner(found.warehouse_location) or {}
    assert (mark["owner"], mark["created_by"], mark["table_arn"]) == (found.owner, "run-1", found.arn)
    # a later run finds it, ours, and creates nothing
    again = table_bucket.resolve(_item(lake, "run-2"), sessions, ledger, create=True)
    assert again.existed and again.item.target_location == found.warehouse_location

    # a table someone else made in the namespace is refused, and so is a table icelake made for
    # another source table
    table_bucket.client(sessions).create_table(
        tableBucketARN=BUCKET, namespace="sales", name="theirs", format="ICEBERG"
    )
    with pytest.raises(TargetNotOursError, match=r"lake\.sales\.theirs exists and icelake did not create it"):
        table_bucket.resolve(_item(lake, "run-3", "theirs"), sessions, ledger, create=True)
    other = _item(lake, "run-4").model_copy(update={"source_table": "customers"})
    with pytest.raises(TargetNotOursError, match=r"owner tag: 111111111111:sales\.orders"):
        table_bucket.resolve(other, sessions, ledger, create=True)


def test_register_commits_from_the_token_plan_read_and_rollback_undoes_without_deleting(lake: Lake) -> None:
    lake.target.client("s3tables").create_table_bucket(name="lake")
    sessions, ledger = lake.deps.sessions(_item(lake, "r").request), lake.deps.ledger
    made = table_bucket.resolve(_item(lake, "run-1"), sessions, ledger, create=True)
    item = made.item
    first = _metadata(item.target_location, "00001")
    table_bucket.register(item, sessions, first, made.previous, made.version)
    table_bucket.register(item, sessions, first, made.previous, made.version)  # a retried step: done
    assert _now(sessions, item).metadata_location == first

    # a sync planned from `first`; someone else commits before its Register: refused
    planned = table_bucket.resolve(item, sessions, ledger, create=True)
    second = _metadata(item.target_location, "00002")
    theirs = _metadata(item.target_location, "00099-theirs")
    now = _now(sessions, item)
    s3tables.commit(table_bucket.client(sessions), table_bucket.table_ref(item), theirs, now.version_token)
    with pytest.raises(ConcurrentCatalogChangeError, match="someone else committed"):
        table_bucket.register(item, sessions, second, planned.previous, planned.version)
    # and its rollback leaves their pointer, naming the run's files as left
    undone = table_bucket.undo(item, sessions, ledger, (second, first, True), [second])
    assert undone.files_left == 1 and undone.action.startswith("left as it is: someone else committed")
    assert _now(sessions, item).metadata_location == theirs

    # a sync that registered, then failed Validate: the earlier pointer is put back
    planned = table_bucket.resolve(item, sessions, ledger, create=True)
    table_bucket.register(item, sessions, second, planned.previous, planned.version)
    assert table_bucket.undo(item, sessions, ledger, (second, theirs, True), [second]).action == "restored"
    assert _now(sessions, item).metadata_location == theirs

    # a table the run created (and registered) is deleted whole
    assert table_bucket.undo(item, sessions, ledger, (theirs, None, False), [theirs]).action == "deleted"
    assert _now(sessions, item) is None


def _now(sessions: Sessions, item: WorkItem) -> s3tables.Found | None:
    return s3tables.find(table_bucket.client(sessions), table_bucket.table_ref(item))


def test_a_dry_run_plans_a_table_not_created_yet_and_writes_nothing(lake: Lake) -> None:
    lake.target.client("s3tables").create_table_bucket(name="lake")
    add_source_table(lake, "orders", [[1, 2], [3]])
    request = lake.request("dry-1", options={"dry_run": True})
    request["target"] = {"kind": "s3tables", "account_id": TARGET_ACCOUNT, "role_arn": TARGET_ROLE}
    request["target"]["table_bucket_arn"] = BUCKET
    inventory = steps.inventory(InventoryInput.model_validate({"request": request}), lake.deps)
    body = lake.deps.artifacts.read_json(inventory.worklist_key, inventory.worklist_bucket)
    (item,) = body

    planned = steps.plan(PlanInput.model_validate({"item": item}), lake.deps)
    outcome = steps.validate(
        PlannedInput.model_validate({"plan": planned.model_dump(mode="json")}), lake.deps
    )

    # the whole table is planned against the table it would create (its location still pending),
    # and nothing is created: no namespace, no table
    assert (planned.engine, outcome.status) == ("none", "dry_run")
    assert outcome.files_copied == 2 and planned.item.target_location == "s3tables://lake/sales/orders"
    assert lake.target.client("s3tables").list_namespaces(tableBucketARN=BUCKET)["namespaces"] == []


def test_a_plan_that_fails_after_creating_the_table_is_rolled_back_by_deleting_it(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake.target.client("s3tables").create_table_bucket(name="lake")
    add_source_table(lake, "orders", [[1, 2], [3]])
    request = lake.request("fails-1")
    request["target"] = {
        "kind": "s3tables",
        "account_id": TARGET_ACCOUNT,
        "role_arn": TARGET_ROLE,
        "table_bucket_arn": BUCKET,
    }
    inventory = steps.inventory(InventoryInput.model_validate({"request": request}), lake.deps)
    (item,) = lake.deps.artifacts.read_json(inventory.worklist_key, inventory.worklist_bucket)

    def unreadable(*_args: object, **_kwargs: object) -> None:
        raise OSError("the source metadata could not be read")

    monkeypatch.setattr(planning, "read_metadata", unreadable)
    with pytest.raises(OSError, match="could not be read"):
        steps.plan(PlanInput.model_validate({"item": item}), lake.deps)
    tables = lake.target.client("s3tables")
    assert [t["name"] for t in tables.list_tables(tableBucketARN=BUCKET)["tables"]] == ["orders"]

    caught = {"Error": "OSError", "Cause": "the source metadata could not be read", "Step": "Plan"}
    outcome = steps.rollback(RollbackInput.model_validate({"item": item, "error": caught}), lake.deps)

    # the table Plan created (still without metadata) is deleted, and the ledger no longer lists it
    assert outcome.status == "rolled_back"
    assert (
        "the target table sales.orders: this run created it before Plan failed; deleted" in outcome.warnings
    )
    assert tables.list_tables(tableBucketARN=BUCKET)["tables"] == []
    assert lake.deps.ledger.owned_in(f"{BUCKET}/sales") == []
