"""The S3 Tables operations moto 5.2.5 lacks, from botocore's s3tables model, and its answers
brought to the model's output shapes.

Added: Get/PutTableMaintenanceConfiguration (per table: `icebergCompaction`, enabled, 512 MB,
strategy auto; `icebergSnapshotManagement`, enabled, at least 1 snapshot, expired after 120 hours:
AWS's defaults), Get/PutTableBucketMaintenanceConfiguration (`icebergUnreferencedFileRemoval`,
enabled, 3 days unreferenced then deleted 10 days later), TagResource, UntagResource,
ListTagsForResource (on a table bucket or a table; also the `tags` of CreateTableBucket and
CreateTable, which moto drops), Get/Put/DeleteTablePolicy and Get/Put/DeleteTableBucketPolicy.
A table's settings live on moto's own table object: DeleteTable takes them away, RenameTable
keeps them, as AWS does.

Brought to the model: GetTable (no nulls; `modifiedBy` is the creator until a change, as AWS
answers; `managedByService` only for a table a service manages), GetTableMetadataLocation (no
null location before the first commit), UpdateTableMetadataLocation (answers `tableARN` and the
namespace as a list; refuses a location outside the warehouse location's own bucket, or one not
ending in `.metadata.json` / `.metadata.json.gz`, as AWS does: moto's check was a string prefix),
CreateNamespace (`tableBucketARN`), ListTables (each summary's `tableARN` and `type`), and the
model's 204 for DeleteTable, DeleteNamespace, DeleteTableBucket and RenameTable.

What it does not do: run any maintenance (nothing compacts, expires or removes files here), or
enforce the resource policies."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

JSON = {"Content-Type": "application/json"}
TABLE_DEFAULTS: Mapping[str, dict[str, Any]] = {
    "icebergCompaction": {
        "status": "enabled",
        "settings": {"icebergCompaction": {"targetFileSizeMB": 512, "strategy": "auto"}},
    },
    "icebergSnapshotManagement": {
        "status": "enabled",
        "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 120}},
    },
}
BUCKET_DEFAULTS: Mapping[str, dict[str, Any]] = {
    "icebergUnreferencedFileRemoval": {
        "status": "enabled",
        "settings": {"icebergUnreferencedFileRemoval": {"unreferencedDays": 3, "nonCurrentDays": 10}},
    },
}
# Each setting's valid range (AWS's maintenance pages; the model says only "at least 1")
RANGES: Mapping[str, tuple[int, int]] = {
    "targetFileSizeMB": (64, 512),
    "minSnapshotsToKeep": (1, 2**31 - 1),
    "maxSnapshotAgeHours": (1, 2**31 - 1),
    "unreferencedDays": (1, 2**31 - 1),
    "nonCurrentDays": (1, 2**31 - 1),
}
STRATEGIES = ("auto", "binpack", "sort", "z-order")
MAX_TAGS = 50  # per resource, as for S3's other resources
_ORIGINAL: dict[str, Callable[[Any], Any]] = {}


def _errors() -> Any:
    from moto.s3tables import exceptions

    return exceptions


def _bad(message: str) -> Exception:
    refused: Exception = _errors().BadRequestException(message)
    return refused


def _empty() -> Any:
    """The model's 204 (moto takes a 3-tuple's status from its `status` header)."""
    return 204, {"status": 204}, ""


def _parts(self: Any) -> list[str]:
    """The request path's segments; the ARNs in it arrive percent-encoded, '/' included."""
    return [unquote(p) for p in self.raw_path.lstrip("/").split("/")]


def _table(self: Any) -> Any:
    _, bucket_arn, namespace, name, *_ = _parts(self)
    return self.s3tables_backend.get_table(bucket_arn, namespace, name)


def _table_bucket(self: Any) -> Any:
    return self.s3tables_backend.get_table_bucket(_parts(self)[1])


def _settings(owner: Any, defaults: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    if not hasattr(owner, "icelake_maintenance"):
        owner.icelake_maintenance = copy.deepcopy(dict(defaults))
    found: dict[str, dict[str, Any]] = owner.icelake_maintenance
    return found


def _checked_value(kind: str, value: Any, defaults: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """A Put...MaintenanceConfiguration's `value` for `kind`, or BadRequestException saying why."""
    if kind not in defaults:
        raise _bad(f"type {kind!r} is not one of {', '.join(defaults)}")
    if not isinstance(value, dict) or value.get("status") not in ("enabled", "disabled"):
        raise _bad("value.status must be enabled or disabled")
    unknown = sorted(set(value) - {"status", "settings"})
    if unknown:
        raise _bad(f"value: {', '.join(unknown)} not members of the configuration value")
    settings = value.get("settings")
    if settings is None:
        return {"status": value["status"]}
    if not isinstance(settings, dict) or set(settings) != {kind}:
        raise _bad(f"value.settings must hold {kind} and nothing else")
    _check_settings(kind, settings[kind], defaults[kind]["settings"][kind])
    # A setting left out takes the service's default, as a new table has it
    return {
        "status": value["status"],
        "settings": {kind: {**defaults[kind]["settings"][kind], **settings[kind]}},
    }


def _check_settings(kind: str, given: Any, known: Mapping[str, Any]) -> None:
    if not isinstance(given, dict):
        raise _bad(f"value.settings.{kind} must be a structure")
    for name, setting in given.items():
        if name not in known:
            raise _bad(f"value.settings.{kind}: {name} is not a setting of {kind}")
        if name == "strategy":
            if setting not in STRATEGIES:
                raise _bad(f"strategy {setting!r} is not one of {', '.join(STRATEGIES)}")
            continue
        low, high = RANGES[name]
        if not isinstance(setting, int) or isinstance(setting, bool) or not low <= setting <= high:
            raise _bad(f"{name} must be a whole number from {low} to {high}: got {setting!r}")


def _put(owner: Any, kind: str, body: bytes | str, defaults: Mapping[str, dict[str, Any]]) -> None:
    """Replace the status; settings given replace the stored ones, settings left out are kept."""
    given = _checked_value(kind, json.loads(body or "{}").get("value"), defaults)
    stored = _settings(owner, defaults)
    stored[kind] = {"status": given["status"], "settings": given.get("settings", stored[kind]["settings"])}


def get_table_maintenance_configuration(self: Any) -> Any:
    table = _table(self)
    answer = {"tableARN": table.arn, "configuration": _settings(table, TABLE_DEFAULTS)}
    return 200, JSON, json.dumps(answer)


def put_table_maintenance_configuration(self: Any) -> Any:
    _put(_table(self), _parts(self)[5], self.body, TABLE_DEFAULTS)
    return _empty()


def get_table_bucket_maintenance_configuration(self: Any) -> Any:
    bucket = _table_bucket(self)
    answer = {"tableBucketARN": bucket.arn, "configuration": _settings(bucket, BUCKET_DEFAULTS)}
    return 200, JSON, json.dumps(answer)


def put_table_bucket_maintenance_configuration(self: Any) -> Any:
    _put(_table_bucket(self), _parts(self)[3], self.body, BUCKET_DEFAULTS)
    return _empty()


# ------------------------------------------------------------------------------------------ tags


def _tagged(self: Any, arn: str) -> Any:
    """The table bucket or table an ARN names, in the caller's account and region."""
    backend = self.s3tables_backend
    bucket_arn, _, _ = arn.partition("/table/")
    bucket = backend.table_buckets.get(bucket_arn)
    if bucket is not None and bucket_arn == arn:
        return bucket
    for namespace in bucket.namespaces.values() if bucket else ():
        for table in namespace.tables.values():
            if table.arn == arn:
                return table
    raise _errors().NotFoundException(f"{arn} names no table bucket or table of this account here")


def _checked_tags(tags: Any) -> dict[str, str]:
    if not isinstance(tags, dict):
        raise _bad("tags must be a map of keys to values")
    if len(tags) > MAX_TAGS:  # checked before a create, so that none is made and then refused
        raise _bad(f"a resource holds at most {MAX_TAGS} tags: {len(tags)} given")
    for key, value in tags.items():
        if not isinstance(key, str) or not 1 <= len(key) <= 128 or key.lower().startswith("aws:"):
            raise _bad(f"tag key {key!r}: 1 to 128 characters, not starting with aws:")
        if not isinstance(value, str) or len(value) > 256:
            raise _bad(f"tag {key}: the value is a string of at most 256 characters")
    return dict(tags)


def _add_tags(owner: Any, tags: dict[str, str]) -> None:
    merged = {**getattr(owner, "icelake_tags", {}), **tags}
    if len(merged) > MAX_TAGS:
        raise _bad(f"a resource holds at most {MAX_TAGS} tags: this would make {len(merged)}")
    owner.icelake_tags = merged


def tag_resource(self: Any) -> Any:
    owner = _tagged(self, _parts(self)[1])
    _add_tags(owner, _checked_tags(json.loads(self.body or "{}").get("tags")))
    return 200, JSON, "{}"


def untag_resource(self: Any) -> Any:
    owner = _tagged(self, _parts(self)[1])
    keys = self.querystring.get("tagKeys") or []
    owner.icelake_tags = {k: v for k, v in getattr(owner, "icelake_tags", {}).items() if k not in keys}
    return _empty()


def list_tags_for_resource(self: Any) -> Any:
    owner = _tagged(self, _parts(self)[1])
    return 200, JSON, json.dumps({"tags": getattr(owner, "icelake_tags", {})})


def create_table_bucket(self: Any) -> Any:
    """moto's CreateTableBucket, keeping the request's tags."""
    tags = _checked_tags(json.loads(self.body or "{}").get("tags") or {})
    status, headers, body = _ORIGINAL["create_table_bucket"](self)
    _add_tags(self.s3tables_backend.get_table_bucket(json.loads(body)["arn"]), tags)
    return status, headers, body


def create_table(self: Any) -> Any:
    """moto's CreateTable, keeping the request's tags."""
    request = json.loads(self.body or "{}")
    tags = _checked_tags(request.get("tags") or {})
    status, headers, body = _ORIGINAL["create_table"](self)
    _, bucket_arn, namespace = _parts(self)
    _add_tags(self.s3tables_backend.get_table(bucket_arn, namespace, request["name"]), tags)
    return status, headers, body


# -------------------------------------------------------------------------------------- policies


def _checked_policy(body: bytes | str) -> str:
    policy = json.loads(body or "{}").get("resourcePolicy")
    if not isinstance(policy, str) or not 1 <= len(policy) <= 20480:
        raise _bad("resourcePolicy: a policy document of 1 to 20,480 characters")
    try:
        document = json.loads(policy)
    except ValueError as exc:
        raise _bad(f"resourcePolicy is not JSON: {exc}") from exc
    if not isinstance(document, dict) or "Statement" not in document:
        raise _bad("resourcePolicy: a policy document holds a Statement")
    return policy


def _policy_of(owner: Any, what: str) -> Any:
    policy = getattr(owner, "icelake_policy", None)
    if policy is None:
        raise _errors().NotFoundException(f"The {what} has no resource policy.")
    return 200, JSON, json.dumps({"resourcePolicy": policy})


def get_table_policy(self: Any) -> Any:
    return _policy_of(_table(self), "table")


def put_table_policy(self: Any) -> Any:
    _table(self).icelake_policy = _checked_policy(self.body)
    return 200, JSON, "{}"


def delete_table_policy(self: Any) -> Any:
    _table(self).icelake_policy = None
    return _empty()


def get_table_bucket_policy(self: Any) -> Any:
    return _policy_of(_table_bucket(self), "table bucket")


def put_table_bucket_policy(self: Any) -> Any:
    _table_bucket(self).icelake_policy = _checked_policy(self.body)
    return 200, JSON, "{}"


def delete_table_bucket_policy(self: Any) -> Any:
    _table_bucket(self).icelake_policy = None
    return _empty()


# ----------------------------------------------------------------------- moto's answers, mended


def get_table(self: Any) -> Any:
    status, headers, body = _ORIGINAL["get_table"](self)
    answer = json.loads(body)
    answer["modifiedBy"] = answer.get("modifiedBy") or answer["createdBy"]
    if answer.get("managedByService") is False:
        answer.pop("managedByService")
    return status, headers, json.dumps({k: v for k, v in answer.items() if v is not None})


def get_table_metadata_location(self: Any) -> Any:
    status, headers, body = _ORIGINAL["get_table_metadata_location"](self)
    return status, headers, json.dumps({k: v for k, v in json.loads(body).items() if v is not None})


def create_namespace(self: Any) -> Any:
    status, headers, body = _ORIGINAL["create_namespace"](self)
    answer = json.loads(body)
    answer["tableBucketARN"] = answer.pop("tableBucketArn")
    return status, headers, json.dumps(answer)


def list_tables(self: Any) -> Any:
    """moto's ListTables, with each summary's tableARN and type (the model requires both)."""
    status, headers, body = _ORIGINAL["list_tables"](self)
    answer = json.loads(body)
    bucket_arn = _parts(self)[1]
    for summary in answer["tables"]:
        found = self.s3tables_backend.get_table(bucket_arn, summary["namespace"][0], summary["name"])
        summary.update(tableARN=found.arn, type=found.type)
    return status, headers, json.dumps(answer)


def _no_content(name: str) -> Callable[[Any], Any]:
    """moto's operation `name`, answering the model's 204 (moto's 3-tuples take their status from
    a `status` header, and moto's own handlers set none: they answer 200)."""

    def method(self: Any) -> Any:
        _ORIGINAL[name](self)
        return _empty()

    method.__name__ = name
    return method


METADATA_SUFFIXES = (".metadata.json", ".metadata.json.gz")


def update_table_metadata_location(self: Any) -> Any:
    location = json.loads(self.body or "{}").get("metadataLocation") or ""
    warehouse = _table(self).warehouse_location
    if not location.startswith(warehouse.rstrip("/") + "/") or not location.endswith(METADATA_SUFFIXES):
        raise _errors().InvalidMetadataLocation()
    status, headers, body = _ORIGINAL["update_table_metadata_location"](self)
    answer = json.loads(body)
    answer["tableARN"] = answer.pop("tableArn")
    answer["namespace"] = [answer["namespace"]]
    return status, headers, json.dumps(answer)


ADDED = (
    get_table_maintenance_configuration,
    put_table_maintenance_configuration,
    get_table_bucket_maintenance_configuration,
    put_table_bucket_maintenance_configuration,
    tag_resource,
    untag_resource,
    list_tags_for_resource,
    get_table_policy,
    put_table_policy,
    delete_table_policy,
    get_table_bucket_policy,
    put_table_bucket_policy,
    delete_table_bucket_policy,
)
MENDED = (
    create_table_bucket,
    create_namespace,
    create_table,
    list_tables,
    get_table,
    get_table_metadata_location,
    update_table_metadata_location,
)
_TABLE = "{0}/tables/(?P<tableBucketARN>[^/]+)/(?P<namespace>[^/]+)/(?P<name>[^/]+)/"
_TABLE_SPLIT = (
    "{0}/tables/(?P<tableBucketARN_pt_1>[^/]+)/(?P<tableBucketARN_pt_2>[^/]+)/(?P<namespace>[^/]+)/"
    "(?P<name>[^/]+)/"
)
# The routes moto lacks: a table's maintenance and policy (the ARN's '/' kept encoded, or split as
# moto's own routes allow), and tags. A bucket's maintenance and policy fit moto's /buckets/.+ route.
_TAILS = ("maintenance$", "maintenance/(?P<type>[^/]+)$", "policy$")
NEW_PATHS = (
    *[prefix + tail for prefix in (_TABLE, _TABLE_SPLIT) for tail in _TAILS],
    "{0}/tag/(?P<resourceArn>.+)$",
)


def install(replace: Callable[[Any, str, Any], None]) -> None:
    """Add the operations and routes to moto's S3 Tables (`replace(owner, name, value)` records
    each change so that it can be undone)."""
    from moto.s3tables import urls
    from moto.s3tables.responses import S3TablesResponse

    no_content = [
        _no_content(n) for n in ("delete_table", "delete_namespace", "delete_table_bucket", "rename_table")
    ]

    paths = dict(urls.url_paths)
    for path in NEW_PATHS:
        paths[path] = S3TablesResponse.dispatch
    replace(urls, "url_paths", paths)
    for method in (*MENDED, *no_content):
        _ORIGINAL.setdefault(method.__name__, S3TablesResponse.__dict__[method.__name__])
    for method in (*ADDED, *MENDED, *no_content):
        replace(S3TablesResponse, method.__name__, method)
