"""The Glue job spreads one table's copies and rewrites over Spark executors (boto3 in the executors)
and ends with the same target, byte for byte and count for count, as the in-process engine."""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from glue_jobs import migrate_table as glue_job
from icelake.aws.fileio import FileIO, FileIOSpec, LocalFileIO, S3FileIO
from icelake.migrate import MigrationResult, migrate_table
from icelake.migrate.check.record import RECORD_NAME, read_record
from icelake.migrate.copy.engine import FileJobs
from icelake.migrate.journal import read_journal, write_journal
from icelake.uris import PrefixMap, canonical
from tests.spark.corpus import PYICEBERG_CASES, SourceTable
from tests.spark.test_migrate_s3 import SOURCE_ROLE, TARGET_ROLE, _listing, _pyiceberg_props, aws
from tests.verify import assert_same_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# Java's hard cases, and every other writer's (tests/spark/corpus.py).
CASES = ["v2_merge_on_read", "v3_deletion_vectors", "data_elsewhere", "java_gzip_metadata", *PYICEBERG_CASES]
RESULTS_BUCKET = "orchestrator-results"

__all__ = ["aws"]  # the two-account moto fixture, shared with test_migrate_s3


def _tree(io: FileIO, roots: list[str]) -> dict[str, bytes]:
    """Every file under the roots, by path relative to its root, with its bytes."""
    out: dict[str, bytes] = {}
    for root in roots:
        for uri, _info in io.list(root):
            out[f"{root}:{canonical(uri)[len(canonical(root)) :]}"] = io.read(uri)
    return out


def _counts(result: MigrationResult) -> dict[str, Any]:
    """What the engine's result and the job's must share (the job also checked the target's files,
    and counted its S3 requests)."""
    return result.model_dump(exclude={"elapsed_seconds", "files_check", "requests"})


def _files_checked_clean(result: MigrationResult) -> bool:
    checked = result.files_check
    return checked is not None and checked.files > 0 and checked.problems == [] and checked.error is None


def _map_args(maps: list[tuple[str, str]], as_json: bool) -> list[str]:
    if not maps:
        return []
    if as_json:
        return ["--map", json.dumps([f"{s}={d}" for s, d in maps])]
    return [arg for s, d in maps for arg in ("--map", f"{s}={d}")]


@pytest.mark.parametrize("case", CASES)
def test_glue_job_file_to_file_writes_what_the_engine_writes(
    case: str, source_tables: dict[str, SourceTable], spark: Any, tmp_path: Path
) -> None:
    # Given what the in-process engine makes of a source table at a target location
    table = source_tables[case]
    io = LocalFileIO()
    out = tmp_path / "out"
    maps = table.maps_under(out)
    expected = migrate_table(table.metadata, str(out / "t"), maps, src_io=io, dst_io=io)
    expected_tree = _tree(io, [str(out)])
    shutil.rmtree(out)
    before = _tree(io, [table.location, *table.extra_prefixes])

    # When the Glue job migrates the same table to the same place on Spark executors
    result_file = tmp_path / "result.json"
    argv = [
        "--JOB_NAME",
        "icelake-migrate-table",  # Glue's own arguments are ignored
        "--source-metadata",
        table.metadata,
        "--target-location",
        str(out / "t"),
        *_map_args(maps, as_json=False),
        "--run-id",
        "r1",
        "--result-uri",
        str(result_file),
    ]
    returned = glue_job.main(argv)

    # Then the target holds exactly the bytes the engine wrote, and the result counts are the same
    assert _tree(io, [str(out)]) == expected_tree
    written = MigrationResult.model_validate_json(result_file.read_bytes())
    assert written == returned
    assert _counts(written) == _counts(expected)
    assert _files_checked_clean(written)
    assert written.files_copied > 0 and written.files_rewritten > 0
    # and Spark and pyiceberg read every snapshot of the target like the source
    checked = assert_same_table(table.metadata, written.target_metadata_location, spark=spark)
    assert checked == written.snapshots
    # and the source is untouched
    assert _tree(io, [table.location, *table.extra_prefixes]) == before

    # And a second run copies and rewrites nothing and leaves the target as it was
    again = glue_job.main([*argv[2:], "--overwrite", "false"])
    assert (again.files_copied, again.files_rewritten) == (0, 0)
    assert again.files_skipped == written.files_copied + written.files_rewritten
    assert _tree(io, [str(out)]) == expected_tree


def test_glue_job_journals_every_key_it_creates_before_writing(
    source_tables: dict[str, SourceTable], spark: Any, tmp_path: Path
) -> None:
    # Given a run's journal that already names a key (an earlier attempt of the run wrote it)
    table = source_tables["v2_merge_on_read"]
    out = tmp_path / "out"
    journal = str(tmp_path / "journal.json.gz")
    earlier = str(out / "t" / "data" / "written-by-an-earlier-attempt.parquet")
    write_journal(LocalFileIO(), journal, [earlier])
    argv = ["--source-metadata", table.metadata, "--target-location", str(out / "t")]

    # When the Glue job migrates the table with that journal
    glue_job.main([*argv, "--journal-uri", journal, "--run-id", "j1"])

    # Then the journal names every file the job created, and still the earlier key
    created = {canonical(uri) for uri, _info in LocalFileIO().list(str(out))}
    journaled = {canonical(k) for k in read_journal(LocalFileIO(), journal)}
    assert created and journaled == created | {canonical(earlier)}
    # and the copy record beside it has the proof of each, the executors' copies included
    record, absent = read_record(LocalFileIO(), [str(tmp_path / RECORD_NAME)])
    assert absent == [] and {canonical(p.target) for p in record} == created
    assert all(p.size == LocalFileIO().stat(p.target).size for p in record)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def results_bucket(aws: dict[str, Any]) -> Iterator[str]:
    boto3.client("s3").create_bucket(Bucket=RESULTS_BUCKET)  # the orchestrator's own account
    yield RESULTS_BUCKET


@pytest.mark.parametrize("case", CASES)
def test_glue_job_s3_to_s3_across_accounts_writes_what_the_engine_writes(
    case: str, aws: dict[str, Any], results_bucket: str, source_tables: dict[str, SourceTable]
) -> None:
    # Given the table in the source account's bucket, and what the engine makes of it in the target's
    table = source_tables[case]
    src_s3 = S3FileIO(aws["src"].client("s3"))
    dst_s3 = S3FileIO(aws["dst"].client("s3"), kms_key_id=aws["kms_key"])
    seed_maps = [(p, f"s3://source-lake/glue-extra/{case}/{s}") for p, s in table.extra_prefixes.items()]
    seeded = migrate_table(
        table.metadata, f"s3://source-lake/glue/{case}", seed_maps, src_io=LocalFileIO(), dst_io=src_s3
    )
    target = f"s3://target-lake/glue/{case}"
    extra = f"glue-extra/{case}"
    maps = [(f"s3://source-lake/{extra}", f"s3://target-lake/{extra}")] if seed_maps else []
    roots = [target, *(d for _s, d in maps)]
    expected = migrate_table(seeded.target_metadata_location, target, maps, src_io=src_s3, dst_io=dst_s3)
    expected_tree = _tree(dst_s3, roots)
    for root in roots:
        for uri, _info in list(dst_s3.list(root)):
            dst_s3.delete(uri)
    source_before = _listing(aws["src"], "source-lake")

    # When the Glue job migrates it, assuming both roles on the driver and copying on the executors
    result_uri = f"s3://{results_bucket}/runs/r2/{case}.json"
    argv = [
        "--source-metadata",
        seeded.target_metadata_location,
        "--target-location",
        target,
        *_map_args(maps, as_json=True),
        "--source-role-arn",
        SOURCE_ROLE,
        "--target-role-arn",
        TARGET_ROLE,
        "--target-kms-key",
        aws["kms_key"],
        "--run-id",
        "r2",
        "--result-uri",
        result_uri,
    ]
    returned = glue_job.main(argv)

    # Then the target holds exactly the bytes the engine wrote, and the result counts are the same
    assert _tree(dst_s3, roots) == expected_tree
    stored = boto3.client("s3").get_object(Bucket=results_bucket, Key=f"runs/r2/{case}.json")["Body"].read()
    written = MigrationResult.model_validate_json(stored)
    assert written == returned
    assert _counts(written) == _counts(expected)
    assert _files_checked_clean(written)
    # ... and the job counted its S3 requests, the executors' included: a CopyObject a data file
    # and a PUT a rewritten file at least
    assert written.requests is not None
    assert written.requests["copy"] == written.files_copied > 0
    assert written.requests["put"] >= written.files_rewritten > 0
    # and every data file was copied server-side (CopyObject records the source ETag), and every
    # object written is encrypted under the target account's key
    client = aws["dst"].client("s3")
    copied = 0
    for root in roots:
        for uri, _info in dst_s3.list(root):
            bucket, key = uri[len("s3://") :].split("/", 1)
            head = client.head_object(Bucket=bucket, Key=key)
            assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", aws["kms_key"])
            copied += "icelake-source-etag" in head.get("Metadata", {})
    assert copied == written.files_copied > 0
    # and pyiceberg reads every snapshot like the original source; the source bucket is unchanged
    props = _pyiceberg_props(aws["endpoint"])
    checked = assert_same_table(table.metadata, written.target_metadata_location, target_props=props)
    assert checked == written.snapshots
    assert _listing(aws["src"], "source-lake") == source_before

    # And a second run copies and rewrites nothing
    again = glue_job.main(argv)
    assert (again.files_copied, again.files_rewritten) == (0, 0)
    assert _tree(dst_s3, roots) == expected_tree


def test_executor_file_jobs_pickle_without_clients_and_hide_credentials(aws: dict[str, Any]) -> None:
    # Given file jobs built from FileIO specs of an assumed role (what the Glue job ships to executors)
    spec = FileIOSpec.for_uri("s3://target-lake/t", aws["dst"], kms_key_id=aws["kms_key"])
    jobs = FileJobs(FileIOSpec.for_uri("/tmp/src"), spec, PrefixMap([("s3://a/t", "s3://target-lake/t")]))

    # When they are pickled and opened in the receiving process
    shipped = pickle.loads(pickle.dumps(jobs))
    assert isinstance(shipped.dst, FileIOSpec)
    opened = shipped.dst.open()

    # Then they act as the role in the target account, under its key, through the same endpoint
    assert isinstance(opened, S3FileIO) and opened.kms_key_id == aws["kms_key"]
    assert opened.client.meta.endpoint_url == aws["endpoint"]
    opened.write("s3://target-lake/spec-check", b"x")
    assert aws["dst"].client("s3").get_object(Bucket="target-lake", Key="spec-check")["Body"].read() == b"x"
    assert shipped.dst.open() is opened  # one client per process and spec
    # and the secret never shows in logs
    secret = aws["dst"].get_credentials().get_frozen_credentials().secret_key
    assert secret not in repr(spec) and secret not in repr(jobs)
    # while a FileIO holding a live boto3 client is refused, not half-shipped
    with pytest.raises(Exception, match="pickle"):
        pickle.dumps(FileJobs(LocalFileIO(), S3FileIO(aws["dst"].client("s3")), jobs.prefix_map))


def _asl_value(expr: str, state: dict[str, Any]) -> str:
    """The few ASL forms the CopyWithGlue arguments use: a JSONPath, States.JsonToString(path)."""
    inner = expr.removeprefix("States.JsonToString(").removesuffix(")")
    value: Any = state
    for key in inner.removeprefix("$.").split("."):
        value = value[key]
    return json.dumps(value) if inner != expr else str(value)


def _find_state(node: Any, name: str) -> Any:
    if isinstance(node, dict):
        if name in node:
            return node[name]
        return next((f for v in node.values() if (f := _find_state(v, name)) is not None), None)
    return None


def test_glue_job_takes_what_the_state_machine_passes() -> None:
    from icelake.request.models import MigrationRequest, WorkItem

    # Given a work item as the workflow plans it, with roles, a KMS key and a prefix outside the table
    request = MigrationRequest.model_validate(
        {
            "run_id": "run-7",
            "source": {"account_id": "111111111111", "role_arn": SOURCE_ROLE},
            "target": {
                "account_id": "222222222222",
                "role_arn": TARGET_ROLE,
                "bucket": "target-lake",
                "kms_key_id": "arn:aws:kms:us-east-1:222222222222:key/1234abcd-12ab-34cd-56ef-1234567890ab",
                "prefix_maps": [{"source": "s3://source-lake/extra", "target": "s3://target-lake/extra"}],
            },
            "selection": {"tables": ["db.t"]},
        }
    )
    item = WorkItem(
        run_id="run-7",
        source_database="db",
        source_table="t",
        source_metadata_location="s3://source-lake/db/t/metadata/00003.metadata.json",
        target_database="db",
        target_table="t",
        target_location="s3://target-lake/db/t",
        request=request,
    )
    state = {
        "plan": {
            "item": item.model_dump(mode="json"),
            "copy_result_uri": "s3://artifacts/r.json",
            "journal_uri": "s3://artifacts/journal.json.gz",
        }
    }

    # When the Glue job resolves the arguments of the CopyWithGlue state of the real ASL file
    asl = json.loads((Path(__file__).parents[2] / "statemachines" / "migrate_tables.asl.json").read_text())
    arguments = _find_state(asl, "CopyWithGlue")["Parameters"]["Arguments"]
    argv = ["--JOB_NAME", "icelake-migrate-table"]
    for key, expr in arguments.items():
        argv += [key.removesuffix(".$"), _asl_value(expr, state) if key.endswith(".$") else expr]
    args = glue_job.parse_args(argv)

    # Then it migrates that table with the work item's roles, key and prefix maps
    assert (args.source_metadata, args.target_location) == (
        item.source_metadata_location,
        item.target_location,
    )
    assert (args.source_role_arn, args.target_role_arn) == (SOURCE_ROLE, TARGET_ROLE)
    key = "arn:aws:kms:us-east-1:222222222222:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    assert args.target_kms_key == key
    assert args.map == [("s3://source-lake/extra", "s3://target-lake/extra")]
    assert (args.run_id, args.result_uri, args.overwrite) == ("run-7", "s3://artifacts/r.json", False)
    # and journals into the run's journal, and validates at the request's tier
    assert args.journal_uri == "s3://artifacts/journal.json.gz"
    assert args.validation == request.options.validation
    assert args.history == request.options.history == "live"
    # and an argument given explicitly wins over the work item
    assert glue_job.parse_args([*argv, "--target-kms-key", "other"]).target_kms_key == "other"
