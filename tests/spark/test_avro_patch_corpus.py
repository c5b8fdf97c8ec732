"""The byte-level manifest rewrite gives exactly the fastavro path's bytes on every corpus manifest."""

from __future__ import annotations

import io

import fastavro
import pytest

from icelake.aws.fileio import LocalFileIO
from icelake.errors import NotPatchable
from icelake.migrate.avro.files import (
    POSITION_DELETES,
    DeleteRewrite,
    manifest_refs_fastavro,
    rewrite_manifest,
    rewrite_manifest_fastavro,
    rewrite_manifest_list_fastavro,
)
from icelake.migrate.avro.patch import (
    ListHeads,
    patch_manifest,
    patch_manifest_list,
    read_manifest_refs,
    splice_manifest,
)
from icelake.migrate.plan_scan import planned_entries
from tests.spark.corpus import SourceTable
from tests.verify import read_metadata_json

pytestmark = [pytest.mark.spark, pytest.mark.slow]
IO = LocalFileIO()


def _map(path: str) -> str:
    return "s3://target-bucket/moved/" + path.rsplit("/", 1)[-1] + "/\u00e9t\u00e9"


def test_fast_path_matches_fastavro_on_every_corpus_manifest(source_tables: dict[str, SourceTable]) -> None:
    patched = spliced = fell_back = 0
    for table in source_tables.values():
        meta = read_metadata_json(IO, table.metadata)
        manifests: dict[str, int] = {}
        for snap in meta["snapshots"]:
            for m in fastavro.reader(io.BytesIO(IO.read(snap["manifest-list"]))):
                manifests[m["manifest_path"]] = m.get("content") or 0  # type: ignore[call-overload]
        for uri, content in manifests.items():
            data = IO.read(uri)
            entries = list(fastavro.reader(io.BytesIO(data)))
            # Given a rewrite of the delete files of delete manifests, as the engine passes it
            rewrites = {
                e["data_file"]["file_path"]: DeleteRewrite(size=7, column_sizes={2147483546: 3})  # type: ignore[call-overload,index]
                for e in entries
                if content
            }
            for deletes in ({}, rewrites):
                # When both paths rewrite it
                calls: list[str] = []

                def recording(path: str, into: list[str] = calls) -> str:
                    into.append(path)
                    return _map(path)

                auto = rewrite_manifest(
                    uri, data, recording, lambda p: _map(p) if "data" in p else None, deletes
                )
                slow_calls: list[str] = []
                slow = rewrite_manifest_fastavro(
                    uri,
                    data,
                    lambda p, into=slow_calls: (into.append(p), _map(p))[1],  # type: ignore[misc]
                    lambda p: _map(p) if "data" in p else None,
                    deletes,
                )
                # Then the bytes and the mapping calls are the same
                assert auto == slow, uri
                assert calls == slow_calls, uri
                # and a data manifest spliced where the plan found its paths gives the same too
                _, planned = planned_entries(uri, data)
                if planned is not None and not deletes:
                    assert splice_manifest(data, planned, _map) == auto, uri
                    spliced += 1
            try:
                patch_manifest(data, _map, lambda p, c: c == POSITION_DELETES)
                patched += 1
            except NotPatchable:
                fell_back += 1
    # And the data manifests of the corpus do go the fast ways
    assert patched > 10 and spliced > 10, (patched, spliced, fell_back)


def test_manifest_lists_are_patched_to_the_fastavro_bytes_on_every_corpus_table(
    source_tables: dict[str, SourceTable],
) -> None:
    lists = 0
    for table in source_tables.values():
        meta = read_metadata_json(IO, table.metadata)
        for snap in meta["snapshots"]:
            data = IO.read(snap["manifest-list"])
            # Given each snapshot's manifest list (Iceberg's Java writer), with new manifest lengths
            lengths = {
                m["manifest_path"]: 1000 + i  # type: ignore[call-overload]
                for i, m in enumerate(fastavro.reader(io.BytesIO(data)))
            }
            # When it is patched; Then it is exactly the fastavro path's rewrite
            slow = rewrite_manifest_list_fastavro(snap["manifest-list"], data, _map, lengths)
            assert patch_manifest_list(data, ListHeads(_map, lengths)) == slow, snap["manifest-list"]
            # And the manifests it names are read from its bytes as fastavro decodes them
            refs = manifest_refs_fastavro(snap["manifest-list"], data)
            assert read_manifest_refs(data) == [(r.path, r.length, r.content) for r in refs]
            lists += 1
    assert lists > 10
