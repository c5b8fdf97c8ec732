"""Deployment settings read from the CDK context (cdk.json, or `-c key=value`), with local defaults
so that `python app.py` synthesizes on a laptop with no AWS credentials."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from constructs import Node

from icelake.constants import ORCHESTRATOR_ACCOUNT_LOCAL, REGION_LOCAL

SOURCE_ROLE_NAME = "icelake-source-read"
TARGET_ROLE_NAME = "icelake-target-write"
STEPS_ROLE_NAME = "icelake-migrate-steps"
GLUE_ROLE_NAME = "icelake-migrate-glue"


@dataclass(frozen=True)
class BucketPrefix:
    bucket: str
    prefix: str = ""

    @property
    def object_pattern(self) -> str:
        """Key pattern of the objects under the prefix (`prefix/*`, or `*` for a whole bucket)."""
        p = self.prefix.strip("/")
        return f"{p}/*" if p else "*"

    @property
    def list_prefix(self) -> str:
        p = self.prefix.strip("/")
        return f"{p}/*" if p else "*"


@dataclass(frozen=True)
class Settings:
    orchestrator_account: str = ORCHESTRATOR_ACCOUNT_LOCAL
    orchestrator_region: str = REGION_LOCAL
    source_account: str = "111111111111"
    source_region: str = REGION_LOCAL
    target_account: str = "222222222222"
    target_region: str = REGION_LOCAL
    source_external_id: str = ""
    source_locations: tuple[BucketPrefix, ...] = (BucketPrefix("source-lake", "warehouse"),)
    source_databases: tuple[str, ...] = ("sales",)
    source_kms_key_arns: tuple[str, ...] = ()
    target_bucket: str = "target-lake"
    target_prefix: str = "warehouse"
    target_databases: tuple[str, ...] = ("sales",)
    lake_formation_enabled: bool = False
    lake_formation_admins: tuple[str, ...] = ()
    notification_emails: tuple[str, ...] = ()
    sync_schedule: str = "rate(1 day)"
    sync_enabled: bool = False
    sync_request: dict[str, Any] = field(default_factory=dict)
    map_concurrency: int = 10
    glue_workers: int = 10
    glue_worker_type: str = "G.1X"
    glue_version: str = "5.1"
    pandas_layer_arn: str = ""
    powertools_layer_arn: str = ""
    deps_layer_dir: str = ""

    @property
    def source_role_arn(self) -> str:
        return f"arn:aws:iam::{self.source_account}:role/{SOURCE_ROLE_NAME}"

    @property
    def target_role_arn(self) -> str:
        return f"arn:aws:iam::{self.target_account}:role/{TARGET_ROLE_NAME}"

    @property
    def orchestrator_principal_arns(self) -> list[str]:
        """The orchestrator roles that assume the source and target roles (Lambdas and Glue job)."""
        return [
            f"arn:aws:iam::{self.orchestrator_account}:role/{STEPS_ROLE_NAME}",
            f"arn:aws:iam::{self.orchestrator_account}:role/{GLUE_ROLE_NAME}",
        ]

    @property
    def target_location(self) -> BucketPrefix:
        return BucketPrefix(self.target_bucket, self.target_prefix)

    @classmethod
    def from_context(cls, node: Node) -> Settings:
        def get(key: str, default: Any) -> Any:
            value = node.try_get_context(key)
            if value is None:
                return default
            # `-c key=value` on the command line gives strings; JSON ones are parsed.
            if isinstance(value, str) and (
                isinstance(default, (list, tuple, dict, bool, int)) or value.strip()[:1] in ("[", "{")
            ):
                value = json.loads(value)
            return value

        d = cls()
        locations = get("source_locations", None)
        return cls(
            orchestrator_account=str(get("orchestrator_account", d.orchestrator_account)),
            orchestrator_region=get("orchestrator_region", d.orchestrator_region),
            source_account=str(get("source_account", d.source_account)),
            source_region=get("source_region", d.source_region),
            target_account=str(get("target_account", d.target_account)),
            target_region=get("target_region", d.target_region),
            source_external_id=get("source_external_id", d.source_external_id),
            source_locations=(
                tuple(BucketPrefix(x["bucket"], x.get("prefix", "")) for x in locations)
                if locations
                else d.source_locations
            ),
            source_databases=tuple(get("source_databases", d.source_databases)),
            source_kms_key_arns=tuple(get("source_kms_key_arns", d.source_kms_key_arns)),
            target_bucket=get("target_bucket", d.target_bucket),
            target_prefix=get("target_prefix", d.target_prefix),
            target_databases=tuple(get("target_databases", d.target_databases)),
            lake_formation_enabled=bool(get("lake_formation_enabled", d.lake_formation_enabled)),
            lake_formation_admins=tuple(get("lake_formation_admins", d.lake_formation_admins)),
            notification_emails=tuple(get("notification_emails", d.notification_emails)),
            sync_schedule=get("sync_schedule", d.sync_schedule),
            sync_enabled=bool(get("sync_enabled", d.sync_enabled)),
            sync_request=dict(get("sync_request", {})),
            map_concurrency=int(get("map_concurrency", d.map_concurrency)),
            glue_workers=int(get("glue_workers", d.glue_workers)),
            glue_worker_type=get("glue_worker_type", d.glue_worker_type),
            glue_version=get("glue_version", d.glue_version),
            pandas_layer_arn=get("pandas_layer_arn", d.pandas_layer_arn),
            powertools_layer_arn=get("powertools_layer_arn", d.powertools_layer_arn),
            deps_layer_dir=get("deps_layer_dir", d.deps_layer_dir),
        )
