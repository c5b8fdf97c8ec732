"""An S3 Tables target in an assessment (`target.kind: s3tables`), read and never written: what
Plan will find in the table bucket (the table, icelake's or not, and its storage), how analysts
will name each table in Athena, what it keeps after cutover (icelake/aws/s3tables_maintenance.py:
the request's `options.s3tables_maintenance`, else the source's retention), what its first
compaction costs, the bucket's unreferenced-file removal, and what is not carried (Lake
Formation). A table Plan would create is planned against storage that does not exist yet
(`new_table_io`): the HEADs Plan will send there, one per key it writes, are counted, not sent."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from icelake.assess.estimate.prices import PriceTable
from icelake.assess.schema import Finding, S3TablesTable, TableBucket
from icelake.aws import s3tables
from icelake.aws import s3tables_maintenance as maintenance
from icelake.aws.fileio import S3FileIO
from icelake.errors import PriceTableError
from icelake.request import target
from icelake.request.deps import Deps
from icelake.request.models import WorkItem
from icelake.request.s3tables import parse_table_bucket_arn
from icelake.request.target import owner_of

# Where a table Plan would create is planned: a table's storage is a bucket of its own, named by
# the service and ending in --table-s3, with the files at its root.
NEW_TABLE_BUCKET = "icelake-new-table--table-s3"
NEW_TABLE_STORAGE = f"s3://{NEW_TABLE_BUCKET}"
_SORTED = ("sort", "z-order")


def athena_name(item: WorkItem) -> str:
    """The table as an analyst types it in Athena (the s3tablescatalog federated catalog)."""
    return target.athena_name(item) or item.target_name


@dataclass
class BucketRemovals:
    """Each table bucket's unreferenced-file removal read once per assessment."""

    read: dict[str, tuple[TableBucket, Finding | None]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, arn: str, client: Any) -> tuple[TableBucket, Finding | None]:
        with self.lock:
            if arn not in self.read:
                self.read[arn] = _read_bucket(arn, client)
            return self.read[arn]


def _read_bucket(arn: str, client: Any) -> tuple[TableBucket, Finding | None]:
    """The bucket's removal settings, and a blocker (no such bucket there) or a warning (not read)."""
    bucket = parse_table_bucket_arn(arn)
    try:
        removal = maintenance.unreferenced_removal(client, arn)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in ("NotFoundException", "NoSuchTableBucket"):
            said = (
                f"table bucket {arn} does not exist in {bucket.region}, the target region: create it "
                "there, or name a table bucket of that region and account"
            )
            return TableBucket(arn=arn, region=bucket.region, said=said), Finding(
                kind="table_bucket_missing", message=said
            )
        said = (
            f"the table bucket's maintenance could not be read ({code or exc}): its unreferenced-file "
            "removal, which takes what a rolled back run leaves, is assumed AWS's default (3 days "
            "unreferenced, deleted 10 days later)"
        )
        return TableBucket(arn=arn, region=bucket.region, said=said), Finding(
            kind="table_bucket_unread", message=said
        )
    if removal.enabled:
        said = (
            f"unreferenced-file removal on: a file no snapshot references is marked after "
            f"{removal.unreferenced_days} days and deleted {removal.noncurrent_days} days later"
        )
    else:
        said = "unreferenced-file removal off: what a rolled back run leaves stays until it is turned on"
    return TableBucket(
        arn=arn,
        region=bucket.region,
        removal_enabled=removal.enabled,
        unreferenced_days=removal.unreferenced_days,
        noncurrent_days=removal.noncurrent_days,
        said=said,
    ), None


@dataclass(frozen=True)
class Target:
    """An S3 Tables work item as the assessment plans it: located at the table's storage (or the
    stand-in of a table Plan would create, read through `io`), with what was found."""

    item: WorkItem
    bucket: TableBucket
    blockers: list[Finding]
    warnings: list[Finding]
    exists: bool  # else planned at NEW_TABLE_STORAGE, read through new_table_io
    current: str | None = None  # its metadata location (None: never committed to)


def read_target(item: WorkItem, deps: Deps, client: Any, removals: BucketRemovals) -> Target:
    """The table bucket and the table as Plan will find them (`client`: the target's S3 Tables
    client); reads only."""
    arn = str(item.request.target.table_bucket_arn)
    bucket, about_bucket = removals.get(arn, client)
    blockers = [about_bucket] if about_bucket and about_bucket.kind == "table_bucket_missing" else []
    warnings = [about_bucket] if about_bucket and not blockers else []
    warnings += _not_carried(item)
    if blockers:  # no bucket: nothing to find, plan the table as new
        return Target(_at(item, NEW_TABLE_STORAGE), bucket, blockers, warnings, False)
    ref = s3tables.TableRef(arn, item.target_database, item.target_table)
    try:
        found = s3tables.find(client, ref)
    except ClientError as exc:  # not readable with this role: Plan would stop there too
        code = str(exc.response.get("Error", {}).get("Code", ""))
        said = f"target table {ref} could not be read ({code or exc}): deploy with it in table_bucket_arns"
        blockers.append(Finding(kind="table_unread", message=said))
        return Target(_at(item, NEW_TABLE_STORAGE), bucket, blockers, warnings, False)
    if found is None:
        return Target(_at(item, NEW_TABLE_STORAGE), bucket, blockers, warnings, False)
    mark = found.owner if found.owner is not None else _ledger_mark(deps, found.warehouse_location)
    if mark != owner_of(item):
        blockers.append(
            Finding(
                kind="target_not_ours",
                message=f"target table {ref} exists and icelake did not create it for {owner_of(item)} "
                f"(owner tag: {found.owner or 'none'}; ledger: {mark or 'no mark'}): icelake leaves it "
                "untouched; send this table to another name (target.names, target.renames)",
            )
        )
    return Target(
        _at(item, found.warehouse_location), bucket, blockers, warnings, True, found.metadata_location
    )


def _at(item: WorkItem, location: str) -> WorkItem:
    return item.model_copy(update={"target_location": location})


def _ledger_mark(deps: Deps, location: str) -> str | None:
    """The ledger's owner mark of a table's storage; None when there is no ledger yet (an estate is
    often assessed before anything is deployed) or no mark."""
    try:
        return (deps.ledger.owner(location) or {}).get("owner")
    except Exception:  # not deployed, or not readable: nothing it could tell
        return None


def _not_carried(item: WorkItem) -> list[Finding]:
    spec = item.request.target
    asked = [
        name
        for name, given in (
            ("lake_formation.copy_permissions", spec.lake_formation.copy_permissions),
            ("lake_formation.copy_tags", spec.lake_formation.copy_tags),
            ("lake_formation_principals", bool(spec.lake_formation_principals)),
        )
        if given
    ]
    if not asked:
        return []
    return [
        Finding(
            kind="lake_formation_not_carried",
            message=f"target.{', target.'.join(asked)}: Lake Formation grants and tags are not carried to "
            f"an S3 Tables target; grant them on {athena_name(item)} in Lake Formation after the "
            "migration",
        )
    ]


def table_keeps(
    item: WorkItem, metadata: Mapping[str, Any], prices: PriceTable, exists: bool
) -> tuple[S3TablesTable, Finding | None]:
    """What the table keeps after cutover, what compacting it the first time costs (its current
    data files, when they average under the compaction's target size: an upper bound, S3 Tables
    compacts only the files it finds too small), and a blocker when the source's retention cannot
    be carried."""
    properties = {str(k): str(v) for k, v in (metadata.get("properties") or {}).items()}
    try:
        settings = maintenance.cutover_settings(
            item.request.options.s3tables_maintenance, properties, item.name
        )
    except ValueError as exc:
        said = str(exc)
        refused = S3TablesTable(athena_name=athena_name(item), exists=exists, keeps=said, compaction="")
        return refused, Finding(kind="source_retention", message=said)
    compaction = (
        f"on at cutover: {settings.target_file_size_mb} MB files, strategy {settings.strategy}"
        if settings.compaction_enabled
        else "off (options.s3tables_maintenance)"
    )
    usd, how = _first_compaction(metadata, settings, prices)
    table = S3TablesTable(
        athena_name=athena_name(item),
        exists=exists,
        maintenance_at_cutover=settings.values(),
        keeps=settings.keeps(),
        compaction=compaction,
        first_compaction_usd=usd,
        first_compaction=how,
    )
    return table, None


def _first_compaction(
    metadata: Mapping[str, Any], settings: maintenance.Cutover, prices: PriceTable
) -> tuple[float | None, str]:
    if not settings.compaction_enabled:
        return None, "compaction off"
    summary = _current_summary(metadata)
    files, size = int(summary.get("total-data-files", 0)), int(summary.get("total-files-size", 0))
    if not files:
        return 0.0, "no data files"
    average_mb = size / files / 1024**2
    if average_mb >= settings.target_file_size_mb:
        return 0.0, f"its {files:,} data files average {average_mb:,.0f} MB, the target size or more"
    try:
        usd = prices.compaction_usd(files, size, sort=settings.strategy in _SORTED)
    except PriceTableError as exc:
        return None, str(exc)
    return round(usd, 6), (
        f"at most {files:,} data files ({size / 1024**3:,.2f} GiB, {average_mb:,.1f} MB on average, under "
        f"the {settings.target_file_size_mb} MB target) processed once"
    )


def _current_summary(metadata: Mapping[str, Any]) -> dict[str, Any]:
    current = metadata.get("current-snapshot-id")
    for snapshot in metadata.get("snapshots") or []:
        if snapshot.get("snapshot-id") == current:
            return dict(snapshot.get("summary") or {})
    return {}


class _Raw:
    """The body of an answer made here (botocore reads it as a stream)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def _not_there(request: Any, event_name: str = "", **_: Any) -> AWSResponse | None:
    """A 404 for a key of the storage of a table Plan has not created (`NEW_TABLE_BUCKET`): it is
    empty. Other buckets' requests are sent as they are."""
    if NEW_TABLE_BUCKET not in str(request.url):
        return None
    operation = event_name.rsplit(".", 1)[-1]
    if operation not in ("HeadObject", "GetObject"):
        raise AssertionError(f"an assessment sends {operation} to a table's storage Plan has not created")
    body = (
        b""
        if operation == "HeadObject"
        else b"<Error><Code>NoSuchKey</Code><Message>absent</Message></Error>"
    )
    return AWSResponse(request.url, 404, {}, _Raw(body))


def new_table_io(client: Any) -> S3FileIO:
    """The storage of a table Plan would create, empty: its HEADs (and GETs) are answered 'not
    there' without being sent, once the assessment's request count has counted them (the answer is
    registered last), as Plan will send them after CreateTable has made the storage."""
    client.meta.events.register_last("before-send.s3", _not_there, unique_id="icelake-new-table-storage")
    return S3FileIO(client)
