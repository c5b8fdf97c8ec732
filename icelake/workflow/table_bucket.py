"""An S3 Tables target (`target.kind: s3tables`) in the migration's steps, where a Glue target
uses icelake/aws/catalog.py: Plan finds the table or creates it (its namespace too), refuses one
icelake did not create, and reads its storage (the warehouse location, where the files go) and
its version token; Register commits from that token; Rollback deletes a table this run created,
or puts the earlier pointer back, and never deletes an object (a table bucket's storage takes no
DeleteObject: what the run wrote is left to the bucket's unreferenced-file removal, and named)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from icelake.aws import s3tables
from icelake.aws import s3tables_maintenance as maintenance
from icelake.aws.ledger import Ledger
from icelake.errors import ConcurrentCatalogChangeError, TargetNotOursError
from icelake.migrate import metadata_json as mj
from icelake.request.deps import Sessions
from icelake.request.models import WorkItem
from icelake.request.target import owner_of

# The bucket's unreferenced-file removal when its configuration is not readable: AWS's defaults.
UNREFERENCED_DAYS = 3
NONCURRENT_DAYS = 10


def is_table_bucket(item: WorkItem) -> bool:
    return item.request.target.kind == "s3tables"


def table_ref(item: WorkItem) -> s3tables.TableRef:
    arn = item.request.target.table_bucket_arn
    if arn is None:
        raise ValueError(f"{item.name}: its target is not a table bucket")
    return s3tables.TableRef(arn, item.target_database, item.target_table)


def owned_key(ref: s3tables.TableRef) -> tuple[str, str]:
    """How the ledger lists the tables icelake created: by "<table bucket ARN>/<namespace>", name."""
    return f"{ref.bucket_arn}/{ref.namespace}", ref.name


def client(sessions: Sessions) -> Any:
    return sessions.target.client("s3tables")


@dataclass(frozen=True)
class Resolved:
    """The target table as Plan found (or made) it."""

    item: WorkItem  # with target_location the table's storage, once the table exists
    existed: bool  # before this run
    previous: str | None  # its metadata location before this run (None: never committed to)
    version: str | None  # the version token read now, which Register commits from


def resolve(item: WorkItem, sessions: Sessions, ledger: Ledger, create: bool) -> Resolved:
    """The target table: found and checked to be icelake's, or (with `create`) created with its
    namespace, marked in the ledger and by a tag. Absent and not created (a dry run, a mode that
    writes no table): the item is left with its pending location."""
    tables, ref, owner = client(sessions), table_ref(item), owner_of(item)
    found = s3tables.find(tables, ref)
    existed = found is not None
    if found is not None:
        check_ours(found, owner, ledger, ref)
    elif create:
        found = s3tables.create(tables, ref, owner)
        ledger.mark_owner(found.warehouse_location, owner, item.run_id, found.arn, *owned_key(ref))
    if found is None:
        return Resolved(item, False, None, None)
    located = item.model_copy(update={"target_location": found.warehouse_location})
    return Resolved(located, existed, found.metadata_location, found.version_token)


def check_ours(found: s3tables.Found, owner: str, ledger: Ledger, ref: s3tables.TableRef) -> None:
    """Refuse a table icelake did not create for `owner`: its owner tag says so, or, where the
    service keeps no tag, the ledger's mark of the table's storage (unique to the table: a table
    dropped and made again by someone else has other storage, and no mark)."""
    marked = (ledger.owner(found.warehouse_location) or {}).get("owner")
    mark = found.owner if found.owner is not None else marked
    if mark != owner:
        raise TargetNotOursError(
            f"target table {ref} exists and icelake did not create it for {owner} (owner tag: "
            f"{found.owner or 'none'}; ledger: {marked or 'no mark'}), so icelake leaves it untouched: "
            "send this table to another target name (target.names or target.renames) or namespace"
        )


def register(
    item: WorkItem, sessions: Sessions, new_metadata: str, previous: str | None, version: str | None
) -> None:
    """Point the table at `new_metadata`, only from the pointer and version token Plan read: a
    commit by anyone else since is refused (ConcurrentCatalogChangeError), nothing overwritten."""
    tables, ref = client(sessions), table_ref(item)
    found = s3tables.find(tables, ref)
    if found is None:
        raise ConcurrentCatalogChangeError(f"table {ref} was dropped while the migration ran")
    if found.metadata_location == new_metadata:
        return  # a re-run of a step that already committed
    if found.metadata_location != previous or version is None:
        raise ConcurrentCatalogChangeError(
            f"table {ref} points at {found.metadata_location}, expected {previous}: someone else committed "
            "to it while the migration ran; nothing was overwritten, re-run the migration"
        )
    s3tables.commit(tables, ref, new_metadata, version)


@dataclass(frozen=True)
class Undone:
    """What Rollback did to the table, and the run's files it leaves behind."""

    action: str  # deleted, restored, unchanged, absent, or why it was left alone
    files_left: int = 0


def undo(
    item: WorkItem,
    sessions: Sessions,
    ledger: Ledger,
    plan: tuple[str, str | None, bool],
    journaled: list[str],
) -> Undone:
    """Put the table back as it was before the run, deleting no object. `plan`: the metadata the
    run registers, the pointer before it, and whether the table existed before the run. A table
    this run created is deleted whole (its storage, and the files written there, go with it);
    otherwise the earlier pointer is put back and the files the run wrote stay in the table's
    storage until the bucket's unreferenced-file removal takes them. A commit by anyone else
    since Plan is never undone."""
    new_metadata, previous, existed = plan
    tables, ref = client(sessions), table_ref(item)
    found = s3tables.find(tables, ref)
    if found is None:
        return Undone("absent")
    try:
        check_ours(found, owner_of(item), ledger, ref)
    except TargetNotOursError:
        return Undone("not ours: left alone", len(journaled))
    if found.metadata_location not in (previous, new_metadata):
        return Undone(
            f"left as it is: someone else committed to it since ({found.metadata_location})", len(journaled)
        )
    if not existed:
        s3tables.delete(tables, ref, found.version_token)
        ledger.forget_owned(*owned_key(ref))
        return Undone("deleted")
    if found.metadata_location == new_metadata and previous is not None:
        s3tables.commit(tables, ref, previous, found.version_token)
        return Undone("restored", len(journaled))
    return Undone("unchanged", len(journaled))


def removal_days(sessions: Sessions, item: WorkItem) -> tuple[int, int] | None:
    """(days unreferenced before a file is marked, days after which a marked file is deleted) of
    the table bucket's unreferenced-file removal; None when it is disabled; AWS's defaults when
    its configuration is not readable."""
    arn = item.request.target.table_bucket_arn or ""
    try:
        removal = maintenance.unreferenced_removal(client(sessions), arn)
    except ClientError:  # not readable with this role: AWS's defaults, which the note says
        return UNREFERENCED_DAYS, NONCURRENT_DAYS
    return (removal.unreferenced_days, removal.noncurrent_days) if removal.enabled else None


def pause_maintenance(item: WorkItem, sessions: Sessions, ledger: Ledger) -> None:
    """Compaction and snapshot management off while icelake syncs the table (a compaction's
    commit would make the target diverge; the service's snapshot expiry would take the history
    carried); the configuration found first is kept in the ledger."""
    found = maintenance.pause_for_sync(client(sessions), table_ref(item).args)
    ledger.record_maintenance(item.target_location, found)


def set_cutover_maintenance(item: WorkItem, sessions: Sessions) -> str:
    """The maintenance cutover sets (options.s3tables_maintenance, else the source's retention);
    returns what the table keeps, for the outcome."""
    meta, _gz = mj.parse_metadata(
        item.source_metadata_location, sessions.source_io().read(item.source_metadata_location)
    )
    settings = maintenance.cutover_settings(
        item.request.options.s3tables_maintenance, meta.get("properties") or {}, item.name
    )
    maintenance.apply_cutover(client(sessions), table_ref(item).args, settings)
    compaction = "on" if settings.compaction_enabled else "off"
    return (
        f"S3 Tables maintenance set at cutover: compaction {compaction}; the table keeps {settings.keeps()}"
    )


def files_left_note(count: int, journal: str, days: tuple[int, int] | None, why: str) -> str:
    """The outcome's line on files a table bucket keeps that a Glue target would have deleted."""
    when = (
        f"the bucket's unreferenced-file removal marks them {days[0]} days after no snapshot references "
        f"them and deletes them {days[1]} days later"
        if days
        else "the bucket's unreferenced-file removal is disabled, so they stay until it is enabled"
    )
    return (
        f"{count:,} file(s) {why} are left in the table's storage (a table bucket takes no DeleteObject; "
        f"their keys are in {journal}): {when}"
    )


def not_carried(item: WorkItem) -> list[str]:
    """What the request asks of access that an S3 Tables target does not get from icelake."""
    spec = item.request.target
    asked = [
        name
        for name, given in (
            ("lake_formation_principals", bool(spec.lake_formation_principals)),
            ("lake_formation.copy_permissions", spec.lake_formation.copy_permissions),
            ("lake_formation.copy_tags", spec.lake_formation.copy_tags),
        )
        if given
    ]
    if not asked:
        return []
    return [
        f"target.{', target.'.join(asked)}: Lake Formation access is not carried to an S3 Tables target; "
        f"grant it on s3tablescatalog/{spec.table_bucket_arn and spec.table_bucket_arn.rsplit('/', 1)[-1]}."
        f"{item.target_database}.{item.target_table} in Lake Formation"
    ]


def undo_created(item: WorkItem, sessions: Sessions, ledger: Ledger) -> list[str]:
    """After a Plan that failed: delete the table if this run created it and nobody has committed
    to it since (it holds no metadata), else leave it; the outcome's line says which."""
    tables, ref = client(sessions), table_ref(item)
    found = s3tables.find(tables, ref)
    if found is None:
        return []
    mark = ledger.owner(found.warehouse_location) or {}
    if mark.get("created_by") != item.run_id or found.metadata_location is not None:
        return []
    s3tables.delete(tables, ref, found.version_token)
    ledger.forget_owned(*owned_key(ref))
    return [f"the target table {item.target_name}: this run created it before Plan failed; deleted"]


def promote(item: WorkItem, sessions: Sessions, promoted_at: str) -> None:
    """The cutover's mark on the table (a tag, where the service keeps tags; the ledger's
    promotion, which runs read, is recorded either way)."""
    tables, ref = client(sessions), table_ref(item)
    found = s3tables.find(tables, ref)
    if found is None:
        raise ConcurrentCatalogChangeError(f"table {ref} was dropped while the cutover ran")
    s3tables.tag(tables, found.arn, {s3tables.PROMOTED_TAG: promoted_at})
