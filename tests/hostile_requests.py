"""Malformed and adversarial migration requests (issue 44), as edits of a valid request: the ones
the request model refuses (with what its one line must say), the ones only the catalogs refuse, and
valid ones the model must take. tests/unit/test_request_checks.py runs them through the model,
tests/e2e/test_hostile_requests.py through `icelake assess` and `icelake migrate start`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icelake.local.lake import SOURCE_ACCOUNT, SOURCE_BUCKET

ROLE = "arn:aws:iam::111111111111:role/analyst"
SAME_ACCOUNT = {"account_id": SOURCE_ACCOUNT, "bucket": SOURCE_BUCKET, "prefix": "warehouse"}
Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Edit:
    """An edit that sets the dotted `path` of a request (made where absent)."""

    def edit(request: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = request
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return edit


def _drop(path: str) -> Edit:
    def edit(request: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = request
        for key in parents:
            node = node[key]
        del node[last]

    return edit


TABLE_BUCKET = "arn:aws:s3tables:us-east-1:222222222222:bucket/lake"


def _s3tables(**changes: Any) -> Edit:
    """An edit that makes the target a table bucket (issue 61), with `changes` to its fields (a
    value None removes the field)."""

    def edit(request: dict[str, Any]) -> None:
        target = request["target"]
        for field in ("bucket", "prefix", "kms_key_id"):
            target.pop(field, None)
        target.update(kind="s3tables", table_bucket_arn=TABLE_BUCKET)
        for key, value in changes.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value

    return edit


# (case, edit of a valid request, what the one line must say). Refused by the request model.
REFUSED: list[tuple[str, Edit, str]] = [
    # unknown fields at every level
    ("unknown top-level field", _set("modee", "full"), "modee: not a field of a migration request"),
    ("unknown source field", _set("source.acount_id", "1"), "source.acount_id: not a field"),
    ("unknown target field", _set("target.bukket", "x"), "target.bukket: not a field"),
    ("unknown selection field", _set("selection.table", []), "selection.table: not a field"),
    ("unknown options field", _set("options.concurency", 2), "options.concurency: not a field"),
    ("unknown names field", _set("target.names", {"schema": "x"}), "target.names.schema: not a field"),
    (
        "unknown lake_formation field",
        _set("target.lake_formation", {"copy_grants": True}),
        "target.lake_formation.copy_grants: not a field",
    ),
    (
        "unknown prefix_maps field",
        _set(
            "target.prefix_maps", [{"source": "s3://source-lake/x", "target": "s3://target-lake/x", "to": 1}]
        ),
        "target.prefix_maps.0.to: not a field",
    ),
    # missing and empty
    ("missing source", _drop("source"), "source: missing"),
    ("missing target bucket", _drop("target.bucket"), "target.bucket: missing"),
    ("empty source account", _set("source.account_id", ""), "account_id must be 12 digits"),
    ("empty role", _set("source.role_arn", ""), "role_arn must be an IAM role ARN such as"),
    ("empty external id", _set("source.external_id", ""), "external_id must be 2-1224"),
    ("empty region", _set("target.region", ""), "region must be an AWS region name such as eu-west-1"),
    ("empty bucket", _set("target.bucket", ""), "bucket must be an S3 bucket name"),
    ("empty kms key", _set("target.kms_key_id", ""), "kms_key_id '' is not a KMS key ARN"),
    ("empty names.database", _set("target.names", {"database": ""}), "names.database is empty"),
    ("empty selection", _set("selection", {}), "selection needs 'databases' or 'tables'"),
    ("empty database name", _set("selection.databases", [""]), "databases entries are database names"),
    ("empty table name", _set("selection", {"tables": [""]}), "tables entries are 'database.table'"),
    ("empty pattern", _set("selection.patterns", [""]), "patterns entries are table name patterns"),
    ("empty run id", _set("run_id", ""), "run_id must be 1-80"),
    # wrong types
    ("account id as a number", _set("source.account_id", 111111111111), "source.account_id: Input should be"),
    ("databases as a string", _set("selection.databases", "sales"), "selection.databases: Input should be"),
    ("concurrency as words", _set("options.concurrency", "four"), "options.concurrency: Input should be"),
    ("dry_run as maybe", _set("options.dry_run", "maybe"), "options.dry_run: Input should be"),
    ("target as null", _set("target", None), "target: Input should be"),
    (
        "copy_permissions as maybe",
        _set("target.lake_formation", {"copy_permissions": "maybe"}),
        "copy_permissions: Input should be",
    ),
    # one field at a time
    (
        "user ARN as role",
        _set("source.role_arn", "arn:aws:iam::1:user/x"),
        "role_arn must be an IAM role ARN",
    ),
    ("upper-case region", _set("target.region", "EU-WEST-1"), "region must be an AWS region name"),
    ("bucket with capitals", _set("target.bucket", "Target_Lake"), "bucket must be an S3 bucket name"),
    (
        "prefix climbing out",
        _set("target.prefix", "../../etc"),
        "prefix '../../etc' has a '.' or '..' segment",
    ),
    ("prefix with leading slash", _set("target.prefix", "/warehouse"), "starts with '/'"),
    ("prefix with empty segment", _set("target.prefix", "a//b"), "has an empty segment"),
    ("prefix too long", _set("target.prefix", "p" * 400), "bytes, more than the"),
    ("prefix with a newline", _set("target.prefix", "a\nb"), "control character"),
    (
        "kms key not a key",
        _set("target.kms_key_id", "not-a-key"),
        "is not a KMS key ARN, alias ARN or key id",
    ),
    (
        "kms key of another region",
        lambda r: r["target"].update(
            region="eu-west-1", kms_key_id="arn:aws:kms:us-west-2:222222222222:alias/lake"
        ),
        "is a key of us-west-2, and the target is in eu-west-1",
    ),
    (
        "database prefix with capitals",
        _set("target.database_prefix", "Mig "),
        "database_prefix 'Mig ' must be",
    ),
    ("names.table unknown field", _set("target.names", {"table": "{tabel}"}), "only {database} and {table}"),
    ("names.database with table", _set("target.names", {"database": "{table}"}), "uses {table}"),
    (
        "names and database_prefix",
        lambda r: r["target"].update(database_prefix="p_", names={"database": "{database}"}),
        "give database_prefix or names, not both",
    ),
    ("rename key without database", _set("target.renames", {"orders": "a.b"}), "a renames key 'orders'"),
    (
        "rename to capitals",
        _set("target.renames", {"sales.orders": "Sales.Orders"}),
        "must be 'database.table'",
    ),
    (
        "rename to Unicode",
        _set("target.renames", {"sales.orders": "sälës.ordérs"}),
        "must be 'database.table'",
    ),
    (
        "prefix map without scheme",
        _set("target.prefix_maps", [{"source": "source-lake/x", "target": "s3://target-lake/x"}]),
        "is not an s3://bucket/prefix URI",
    ),
    (
        "prefix map climbing out",
        _set("target.prefix_maps", [{"source": "s3://source-lake/x", "target": "s3://target-lake/../x"}]),
        "has a '.' or '..' segment",
    ),
    (
        "principal_map value not a principal",
        _set("target.lake_formation", {"copy_permissions": True, "principal_map": {ROLE: "not-an-arn"}}),
        f"principal_map['{ROLE}'] 'not-an-arn' is not a principal Lake Formation grants to",
    ),
    (
        "principal_map key empty",
        _set("target.lake_formation", {"principal_map": {"": ROLE}}),
        "a principal_map key '' is not a principal",
    ),
    (
        "IAM group as reader",
        _set("target.lake_formation_principals", ["arn:aws:iam::222222222222:group/analysts"]),
        "lake_formation_principals[0]",
    ),
    (
        "tables listed twice",
        _set("selection", {"tables": ["sales.orders", "sales.orders"]}),
        "more than once",
    ),
    ("unknown mode", _set("mode", "everything"), "mode: Input should be"),
    ("concurrency 0", _set("options.concurrency", 0), "options.concurrency: Input should be greater"),
    ("unknown validation", _set("options.validation", "all"), "options.validation: Input should be"),
    ("unknown history", _set("options.history", "some"), "options.history: Input should be"),
    ("session too short", _set("options.session_duration_seconds", 60), "options.session_duration_seconds"),
    ("cutover attempts 0", _set("options.cutover_attempts", 0), "options.cutover_attempts"),
    ("negative sync days", _set("options.sync_days", -1), "options.sync_days"),
    ("negative glue threshold", _set("options.glue_threshold_files", -5), "options.glue_threshold_files"),
    ("run id with spaces", _set("run_id", "a run"), "run_id must be 1-80"),
    # a source equal to its target
    (
        "target is the source (databases)",
        _set("target", {**SAME_ACCOUNT, "prefix": ""}),
        "target sales.<each table> is the source table itself",
    ),
    (
        "target is the source (tables)",
        lambda r: r.update(target=dict(SAME_ACCOUNT), selection={"tables": ["sales.orders"]}),
        "target sales.orders is the source table itself: set target.names, target.renames or another account",
    ),
    (
        "target renamed to itself",
        lambda r: r.update(
            target={
                **SAME_ACCOUNT,
                "renames": {"sales.orders": "sales.orders"},
                "names": {"table": "{table}_v2"},
            }
        ),
        "target sales.orders is the source table itself",
    ),
]

# S3 Tables targets (issue 61): the table bucket, its account and region, names under S3 Tables'
# rules (the rule broken is named), and the fields a table bucket has no use for. The unit test
# runs them all through the model; the first three also go through both commands (e2e).
S3TABLES_REFUSED: list[tuple[str, Edit, str]] = [
    (
        "unknown kind",
        _set("target.kind", "iceberg-rest"),
        "target.kind: Input should be 'glue' or 's3tables'",
    ),
    (
        "namespace prefix with a hyphen",
        _s3tables(database_prefix="migrated-"),
        "'migrated-{database}' makes namespace names that break S3 Tables' rule: names are lower-case "
        "letters, digits and '_' only",
    ),
    ("s3tables without a table bucket", _s3tables(table_bucket_arn=None), "needs table_bucket_arn, such as"),
    (
        "table bucket ARN of a general purpose bucket",
        _s3tables(table_bucket_arn="arn:aws:s3:::lake"),
        "table_bucket_arn 'arn:aws:s3:::lake' is not a table bucket ARN",
    ),
    (
        "table bucket with a reserved suffix",
        _s3tables(table_bucket_arn="arn:aws:s3tables:us-east-1:222222222222:bucket/lake--table-s3"),
        "which is not a table bucket name",
    ),
    (
        "table bucket of another account",
        _s3tables(table_bucket_arn="arn:aws:s3tables:us-east-1:333333333333:bucket/lake"),
        "a table bucket of account 333333333333, and the target account is 222222222222",
    ),
    (
        "table bucket of another region",
        _s3tables(region="eu-west-1"),
        "a table bucket of us-east-1, and the target region is eu-west-1",
    ),
    (
        "s3tables with a bucket",
        _s3tables(bucket="target-lake"),
        "bucket is not used with target.kind 's3tables'",
    ),
    (
        "s3tables with a prefix",
        _s3tables(prefix="warehouse"),
        "prefix is not used with target.kind 's3tables'",
    ),
    (
        "s3tables with a KMS key",
        _s3tables(kms_key_id="1234abcd-12ab-34cd-56ef-1234567890ab"),
        "kms_key_id is not used with target.kind 's3tables'",
    ),
    (
        "s3tables with prefix maps",
        _s3tables(prefix_maps=[{"source": "s3://source-lake/x", "target": "s3://target-lake/x"}]),
        "prefix_maps is not used with target.kind 's3tables'",
    ),
    (
        "table bucket ARN on a glue target",
        _set("target.table_bucket_arn", TABLE_BUCKET),
        "for target.kind 's3tables'",
    ),
    (
        "namespace prefix starting with aws",
        _s3tables(database_prefix="aws_"),
        "namespace names do not start with 'aws'",
    ),
    (
        "namespace prefix starting with _",
        _s3tables(database_prefix="_m"),
        "begin and end with a letter or a digit",
    ),
    (
        "table template with a dot",
        _s3tables(names={"table": "{table}.v2"}),
        "'{table}.v2' makes table names that break S3 Tables' rule",
    ),
    (
        "rename to a namespace ending with _",
        _s3tables(renames={"sales.orders": "sales_.orders"}),
        "renames['sales.orders']: the namespace name 'sales_' breaks S3 Tables' rule",
    ),
    (
        "rename to a table with a hyphen",
        _s3tables(renames={"sales.orders": "sales.orders-v2"}),
        "the table name 'orders-v2' breaks S3 Tables' rule",
    ),
    (
        "maintenance keeping no snapshot",
        lambda r: r.setdefault("options", {}).update(
            s3tables_maintenance={"snapshot_management": {"min_snapshots_to_keep": 0}}
        ),
        "options.s3tables_maintenance.snapshot_management.min_snapshots_to_keep: Input should be greater",
    ),
    (
        "compaction to 4 GB files",
        lambda r: r.setdefault("options", {}).update(
            s3tables_maintenance={"compaction": {"target_file_size_mb": 4096}}
        ),
        "options.s3tables_maintenance.compaction.target_file_size_mb: Input should be less",
    ),
]
REFUSED += S3TABLES_REFUSED[:3]

# Valid to the model; refused by the selection against the catalogs (assess locally, the Inventory
# in AWS), so both commands still end with one line and exit code 2.
BY_THE_CATALOGS: list[tuple[str, Edit, str]] = [
    (
        "10,000-table selection",
        _set("selection", {"tables": [f"sales.t{i:05d}" for i in range(10_000)]}),
        "sales.t00000 does not exist in account 111111111111",
    ),
    ("Unicode table names", _set("selection", {"tables": ["sälës.ørdérs"]}), "sälës.ørdérs does not exist"),
    ("Unicode target names", _set("target.names", {"table": "{table}_ü"}), "is not a Glue name"),
    (
        "target location around the source's",
        lambda r: r["target"].update(bucket=SOURCE_BUCKET, prefix="lake"),
        "overlaps the location of source table sales.orders",
    ),
]

# Valid requests: the model takes them as documented (README's request reference).
VALID: list[tuple[str, Edit]] = [
    ("Unicode prefix (S3 keys are UTF-8)", _set("target.prefix", "données/lake")),
    ("trailing slash on the prefix", _set("target.prefix", "warehouse/")),
    (
        "every principal shape Lake Formation grants to",
        _set(
            "target.lake_formation_principals",
            [
                "arn:aws:iam::222222222222:role/analyst",
                "arn:aws:iam::222222222222:user/ana",
                "arn:aws:iam::222222222222:saml-provider/okta:user/ana@example.com",
                "arn:aws:iam::222222222222:saml-provider/okta:group/analysts",
                "arn:aws:identitystore:::user/9067729b3d-94f1e22d-0b9b-4de8-9b70-0fd09a6a0f2b",
                "arn:aws:identitystore:::group/906753cb-0041-70ae-6cba-1eff8b5cb9bd",
                "222222222222",
                "IAM_ALLOWED_PRINCIPALS",
                "arn:aws:organizations::111111111111:organization/o-abcdefghij",
            ],
        ),
    ),
    ("key id", _set("target.kms_key_id", "1234abcd-12ab-34cd-56ef-1234567890ab")),
    (
        "alias ARN in the target's region",
        lambda r: r["target"].update(
            region="eu-west-1", kms_key_id="arn:aws:kms:eu-west-1:222222222222:alias/lake"
        ),
    ),
    ("same account, other names", _set("target", {**SAME_ACCOUNT, "names": {"database": "{database}_copy"}})),
    ("a table bucket, its region the target's", _s3tables()),
    ("a table bucket, the region named", _s3tables(region="us-east-1", database_prefix="migrated_")),
    (
        "a table bucket, names and renames",
        _s3tables(names={"table": "{table}_v2"}, renames={"sales.orders": "s.o"}),
    ),
    (
        "a table bucket, maintenance set",
        lambda r: (
            _s3tables()(r),
            r.setdefault("options", {}).update(
                s3tables_maintenance={
                    "compaction": {"enabled": False},
                    "snapshot_management": {"min_snapshots_to_keep": 10, "max_snapshot_age_hours": 2160},
                }
            ),
        ),
    ),
]
