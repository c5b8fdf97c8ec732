"""`assess_table` on the embedded AWS: what a table holds, what would block its migration and what
would be weaker than expected, found from the requests the plan sends anyway; and the page that
shows it, in a real browser."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from icelake.assess.cli import write_assessment
from icelake.assess.estimate.prices import load_prices
from icelake.assess.gather.assessment import Settings, assemble, assess_table
from icelake.aws.fileio import S3FileIO
from icelake.migrate import migrate_table
from tests.browser import assert_readable, load
from tests.lake import SOURCE_BUCKET, TARGET_BUCKET, Lake, add_source_table, bucket_state

pytestmark = pytest.mark.slow


def _ios(lake: Lake) -> tuple[S3FileIO, S3FileIO]:
    return S3FileIO(lake.source.client("s3")), S3FileIO(lake.target.client("s3"))


def test_a_glacier_object_blocks_and_an_unchecksummed_one_warns(lake: Lake, tmp_path: Path) -> None:
    # Given a table of three data files, one moved to GLACIER and one written again in parts without
    # a checksum (a single-part object is verified by its MD5 ETag, checksum or not)
    metadata = add_source_table(lake, "orders", [[1, 2], [3], [4, 5, 6]])
    src, dst = _ios(lake)
    data = sorted(uri for uri, _ in src.list(f"s3://{SOURCE_BUCKET}/lake/sales/orders/data"))
    assert len(data) == 3
    frozen, unchecked = data[0], data[1]
    s3 = lake.source.client("s3")
    frozen_key = frozen.removeprefix(f"s3://{SOURCE_BUCKET}/")
    s3.copy_object(
        Bucket=SOURCE_BUCKET,
        Key=frozen_key,
        CopySource={"Bucket": SOURCE_BUCKET, "Key": frozen_key},
        StorageClass="GLACIER",
    )
    plain = lake.source.client("s3", config=Config(request_checksum_calculation="when_required"))
    unchecked_key = unchecked.removeprefix(f"s3://{SOURCE_BUCKET}/")
    body = s3.get_object(Bucket=SOURCE_BUCKET, Key=unchecked_key)["Body"].read()
    upload = plain.create_multipart_upload(Bucket=SOURCE_BUCKET, Key=unchecked_key)["UploadId"]
    part = plain.upload_part(
        Bucket=SOURCE_BUCKET, Key=unchecked_key, UploadId=upload, PartNumber=1, Body=body
    )
    plain.complete_multipart_upload(
        Bucket=SOURCE_BUCKET,
        Key=unchecked_key,
        UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    before = (bucket_state(lake.source, SOURCE_BUCKET), bucket_state(lake.target, TARGET_BUCKET))

    # When it is assessed
    settings = Settings(prices=load_prices("us-east-1"), now=datetime.now(UTC))
    target = f"s3://{TARGET_BUCKET}/warehouse/sales/orders"
    assessed = assess_table("sales.orders", metadata, target, [], src, dst, settings)

    # Then the GLACIER object is a blocker and the unchecksummed one a warning, each named
    blockers = {f.kind: f for f in assessed.blockers}
    warnings = {f.kind: f for f in assessed.warnings}
    assert set(blockers) == {"archived_objects"}
    assert blockers["archived_objects"].objects == [f"{frozen} (GLACIER)"]
    assert (
        frozen in blockers["archived_objects"].message and "restore" in blockers["archived_objects"].message
    )
    assert warnings["no_checksum"].objects == [unchecked]
    assert unchecked in warnings["no_checksum"].message and "size only" in warnings["no_checksum"].message
    # ... the figures are the table's, and nothing was written anywhere
    assert (assessed.data_files, assessed.snapshots, assessed.files_to_copy) == (3, 3, 3)
    assert assessed.data_bytes == sum(
        info.size for _, info in src.list(f"s3://{SOURCE_BUCKET}/lake/sales/orders/data")
    )
    assert assessed.commits_per_day["7d"] == pytest.approx(3 / 7, abs=1e-3)
    assert assessed.estimate is not None and assessed.estimate.requests["copy"] == 3
    # ... and a verify of the migrated target: 4 metadata.json files (the table's creation and 3
    # commits), 3 lists, 3 manifests and the 3 copies (fewer than 50: not worth a listing) HEADed,
    # the metadata.json, lists and manifests read, in the Lambda
    verify = assessed.verify
    assert verify is not None and (verify.files, verify.engine) == (3, "lambda"), verify
    assert verify.requests == {"head": 4 + 3 + 3 + 3, "list": 0, "get": 1 + 3 + 3}, verify
    assert verify.engine_rule.startswith("estimate: the Lambda's check of 3 files"), verify
    assert 0 < verify.duration_s["lambda"] < verify.duration_s["glue"], verify  # the job's start
    assert (bucket_state(lake.source, SOURCE_BUCKET), bucket_state(lake.target, TARGET_BUCKET)) == before

    # ... and the blocker is what a migration really meets: CopyObject refuses the GLACIER object
    with pytest.raises(ClientError, match=r"ObjectNotInActiveTierError|InvalidObjectState"):
        migrate_table(metadata, target, src_io=src, dst_io=dst)

    # The page shows the blocker first, a row for the table and its charts, in a real browser
    _json, page = write_assessment(
        assemble([assessed], settings, {"target_location": target}), tmp_path / "out"
    )
    charts = ["#lanes-chart", "#cost-chart", "#commits-0"]
    seen = load(page, charts, sort_by="data", name="assessment-glacier")
    assert_readable(seen, page, ["sales.orders"], charts)
    assert (
        seen.text.index("Blockers by kind (1 table(s) blocked)")
        < seen.text.index("Warnings by kind (2)")
        < seen.text.index("Tables (1)")
    )
    assert "archived_objects" in seen.text  # its kind's line; the object itself in the findings, collapsed
    assert frozen in page.read_text()
