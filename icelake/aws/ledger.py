"""The run ledger (DynamoDB): each run and table, its pinned source version and state.

Keys: pk = "RUN#<run_id>", sk = "RUN" or "TABLE#<db>.<table>"; pk = "SYNC#<target location>",
sk = "LAST" for the last source metadata synced to a target (what incremental runs start from); and
pk = "LOCK#<target location>", sk = "LOCK" for the run that holds a table while it works on it;
pk = "OWNER#<target location>", sk = "OWNER" for an S3 Tables table icelake created (its storage,
the warehouse location, is that table's alone) and the maintenance it found there, and
pk = "OWNED#<table bucket ARN>/<namespace>", sk = "<table>" listing those tables by namespace.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

_ser, _de = TypeSerializer(), TypeDeserializer()


def _item(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(v) for k, v in values.items() if v is not None}


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _de.deserialize(v) for k, v in item.items()}


class Ledger:
    def __init__(self, dynamodb: Any, table: str) -> None:
        self.db = dynamodb
        self.table = table

    def record_table(self, run_id: str, table: str, state: str, **attrs: Any) -> None:
        """Upsert the table's row of a run; attributes accumulate across steps."""
        values = {
            k: v
            for k, v in {"state": state, "updated_at": int(time.time()), **attrs}.items()
            if v is not None
        }
        keys = list(values)
        self.db.update_item(
            TableName=self.table,
            Key=_item({"pk": f"RUN#{run_id}", "sk": f"TABLE#{table}"}),
            UpdateExpression="SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(keys))),
            ExpressionAttributeNames={f"#a{i}": k for i, k in enumerate(keys)},
            ExpressionAttributeValues={f":v{i}": _ser.serialize(values[k]) for i, k in enumerate(keys)},
        )

    def get_table(self, run_id: str, table: str) -> dict[str, Any] | None:
        out = self.db.get_item(
            TableName=self.table, Key=_item({"pk": f"RUN#{run_id}", "sk": f"TABLE#{table}"})
        )
        return _plain(out["Item"]) if "Item" in out else None

    def run_tables(self, run_id: str) -> list[dict[str, Any]]:
        pages = self.db.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :t)",
            ExpressionAttributeValues={":pk": {"S": f"RUN#{run_id}"}, ":t": {"S": "TABLE#"}},
        )
        return [_plain(i) for p in pages for i in p.get("Items", [])]

    def last_synced(self, target_location: str) -> dict[str, Any] | None:
        out = self.db.get_item(
            TableName=self.table, Key=_item({"pk": f"SYNC#{target_location}", "sk": "LAST"})
        )
        return _plain(out["Item"]) if "Item" in out else None

    def record_synced(
        self,
        target_location: str,
        source_metadata: str,
        target_metadata: str,
        run_id: str,
        journal_key: str | None = None,
    ) -> None:
        """The table's last validated sync; `journal_key` joins the journals of every run that
        wrote to this target (the keys icelake owns there, which is all a prune may delete)."""
        values = {
            ":s": source_metadata,
            ":t": target_metadata,
            ":r": run_id,
            ":at": int(time.time()),
            ":j": [journal_key] if journal_key else [],
            ":none": [],
        }
        self.db.update_item(
            TableName=self.table,
            Key=_item({"pk": f"SYNC#{target_location}", "sk": "LAST"}),
            UpdateExpression="SET source_metadata = :s, target_metadata = :t, run_id = :r, synced_at = :at, "
            "journals = list_append(if_not_exists(journals, :none), :j)",
            ExpressionAttributeValues={k: _ser.serialize(v) for k, v in values.items()},
        )

    def mark_promoted(self, target_location: str, run_id: str, promoted_at: str) -> None:
        """The cutover is done: from now on the target is the table's home and no run writes it."""
        self.db.update_item(
            TableName=self.table,
            Key=_item({"pk": f"SYNC#{target_location}", "sk": "LAST"}),
            UpdateExpression="SET promoted_at = :at, promoted_by = :r",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":at": {"S": promoted_at}, ":r": {"S": run_id}},
        )

    def add_journal(self, target_location: str, journal_key: str) -> None:
        """A repair's journal joins the table's journals (its copy record lies beside it), leaving
        the last sync as it was."""
        self.db.update_item(
            TableName=self.table,
            Key=_item({"pk": f"SYNC#{target_location}", "sk": "LAST"}),
            UpdateExpression="SET journals = list_append(if_not_exists(journals, :none), :j)",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":j": _ser.serialize([journal_key]), ":none": _ser.serialize([])},
        )

    def add_carried(self, target_location: str, snapshot_ids: list[int]) -> None:
        """Source snapshots a carry-over brought to the promoted target: never stranded again, even
        once the target's own maintenance expires the snapshot that names them."""
        self.db.update_item(
            TableName=self.table,
            Key=_item({"pk": f"SYNC#{target_location}", "sk": "LAST"}),
            UpdateExpression="SET carried = list_append(if_not_exists(carried, :none), :ids)",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={
                ":ids": _ser.serialize(list(snapshot_ids)),
                ":none": _ser.serialize([]),
            },
        )

    def count_cutover_attempt(self, run_id: str, table: str) -> int:
        """One more sync of a cutover whose source moved; returns how many there have been."""
        out = self.db.update_item(
            TableName=self.table,
            Key=_item({"pk": f"RUN#{run_id}", "sk": f"TABLE#{table}"}),
            UpdateExpression="ADD cutover_syncs :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="UPDATED_NEW",
        )
        return int(out["Attributes"]["cutover_syncs"]["N"])

    def claim_table(
        self, target_location: str, run_id: str, execution_arn: str | None, lease_seconds: int
    ) -> dict[str, Any] | None:
        """Take the table's lock for `run_id`; None when taken (or already ours), else the holder.

        A conditional write: two runs can never both hold it. The lease ends a dead run's hold."""
        now = int(time.time())
        try:
            self.db.put_item(
                TableName=self.table,
                Item=_lock_item(target_location, run_id, execution_arn, now + lease_seconds),
                ConditionExpression="attribute_not_exists(pk) OR run_id = :me OR expires_at < :now",
                ExpressionAttributeValues={":me": {"S": run_id}, ":now": {"N": str(now)}},
            )
        except self.db.exceptions.ConditionalCheckFailedException:
            out = self.db.get_item(TableName=self.table, Key=_lock_key(target_location), ConsistentRead=True)
            return _plain(out["Item"]) if "Item" in out else {"run_id": "unknown"}
        return None

    def holder(self, target_location: str) -> dict[str, Any] | None:
        """Who holds the table's lock now (a lease not yet over), without taking it."""
        out = self.db.get_item(TableName=self.table, Key=_lock_key(target_location), ConsistentRead=True)
        held = _plain(out["Item"]) if "Item" in out else None
        if held is None or int(held.get("expires_at", 0)) < int(time.time()):
            return None
        return held

    def take_over_table(
        self, target_location: str, run_id: str, execution_arn: str | None, lease_seconds: int, holder: str
    ) -> bool:
        """Take the lock from run `holder` (known to be over); False when someone else was faster."""
        try:
            self.db.put_item(
                TableName=self.table,
                Item=_lock_item(target_location, run_id, execution_arn, int(time.time()) + lease_seconds),
                ConditionExpression="run_id = :holder",
                ExpressionAttributeValues={":holder": {"S": holder}},
            )
        except self.db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release_table(self, target_location: str, run_id: str) -> None:
        """Give the lock back, if `run_id` still holds it."""
        with contextlib.suppress(self.db.exceptions.ConditionalCheckFailedException):
            self.db.delete_item(
                TableName=self.table,
                Key=_lock_key(target_location),
                ConditionExpression="run_id = :me",
                ExpressionAttributeValues={":me": {"S": run_id}},
            )

    def mark_owner(
        self, target_location: str, owner: str, run_id: str, table_arn: str, namespace: str, name: str
    ) -> None:
        """icelake created the table whose storage is `target_location` for source table `owner`;
        `namespace` ("<table bucket ARN>/<namespace>") lists it by `name` (`owned_in`)."""
        self.db.update_item(
            TableName=self.table,
            Key=_owner_key(target_location),
            UpdateExpression="SET #o = :o, created_by = if_not_exists(created_by, :r), table_arn = :a",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": owner}, ":r": {"S": run_id}, ":a": {"S": table_arn}},
        )
        self.db.put_item(
            TableName=self.table,
            Item=_item({"pk": f"OWNED#{namespace}", "sk": name, "owner": owner, "location": target_location}),
        )

    def owned_in(self, namespace: str) -> list[dict[str, Any]]:
        """The tables icelake created in `namespace` and has not deleted: sk is the table's name."""
        pages = self.db.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"OWNED#{namespace}"}},
        )
        return [_plain(i) for p in pages for i in p.get("Items", [])]

    def forget_owned(self, namespace: str, name: str) -> None:
        """A table icelake created was deleted (a rollback's DeleteTable)."""
        self.db.delete_item(TableName=self.table, Key=_item({"pk": f"OWNED#{namespace}", "sk": name}))

    def owner(self, target_location: str) -> dict[str, Any] | None:
        """The OWNER row of a table icelake created (mark_owner), or None."""
        out = self.db.get_item(TableName=self.table, Key=_owner_key(target_location), ConsistentRead=True)
        return _plain(out["Item"]) if "Item" in out else None

    def record_maintenance(self, target_location: str, found: dict[str, Any]) -> None:
        """The maintenance a table had before icelake first turned it off (kept from the first run)."""
        self.db.update_item(
            TableName=self.table,
            Key=_owner_key(target_location),
            UpdateExpression="SET maintenance_found = if_not_exists(maintenance_found, :m)",
            ExpressionAttributeValues={":m": _ser.serialize(found)},
        )


def _owner_key(target_location: str) -> dict[str, Any]:
    return _item({"pk": f"OWNER#{target_location}", "sk": "OWNER"})


def _lock_key(target_location: str) -> dict[str, Any]:
    return _item({"pk": f"LOCK#{target_location}", "sk": "LOCK"})


def _lock_item(
    target_location: str, run_id: str, execution_arn: str | None, expires_at: int
) -> dict[str, Any]:
    return _item(
        {
            "pk": f"LOCK#{target_location}",
            "sk": "LOCK",
            "run_id": run_id,
            "execution_arn": execution_arn,
            "expires_at": expires_at,
            "claimed_at": int(time.time()),
        }
    )


def create_ledger_table(dynamodb: Any, table: str) -> None:
    """For the embedded AWS and tests; in AWS the CDK app creates the same table."""
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
