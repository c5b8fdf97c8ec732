"""The run ledger (DynamoDB): each run and table, its pinned source version and state.

Keys: pk = "RUN#<run_id>", sk = "RUN" or "TABLE#<db>.<table>"; and pk = "SYNC#<target location>",
sk = "LAST" for the last source metadata synced to a target (what incremental runs start from).
"""

from __future__ import annotations

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
        self, target_location: str, source_metadata: str, target_metadata: str, run_id: str
    ) -> None:
        self.db.put_item(
            TableName=self.table,
            Item=_item(
                {
                    "pk": f"SYNC#{target_location}",
                    "sk": "LAST",
                    "source_metadata": source_metadata,
                    "target_metadata": target_metadata,
                    "run_id": run_id,
                    "synced_at": int(time.time()),
                }
            ),
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
