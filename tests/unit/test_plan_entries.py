"""How the plan takes the files a table's manifests name (`plan.manifest_files`, `add_entries`):
in columns, with whole manifests of live entries set at once, exactly as entry by entry."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icelake.migrate.avro.entries import EntryFields
from icelake.migrate.plan.entries import add_entries, manifest_files

DELETED, POSITION_DELETES, EQUALITY_DELETES = 2, 1, 2


def _entry_by_entry(
    manifests: list[list[EntryFields]],
) -> tuple[dict[str, int], dict[str, str], set[str], set[str]]:
    """The rule, one entry at a time: a file's recorded size is `size * 2 + live`, and a deleted
    entry leaves it as live as an earlier entry made it."""
    files: dict[str, int] = {}
    delete_formats: dict[str, str] = {}
    refs: set[str] = set()
    equality: set[str] = set()
    for entries in manifests:
        for status, content, path, size, reference, file_format in entries:
            live = status != DELETED or bool(files.get(path, 0) & 1)
            files[path] = size * 2 + live
            if reference:
                refs.add(reference)
            if content == POSITION_DELETES:
                assert file_format is not None
                delete_formats[path] = file_format
            elif content == EQUALITY_DELETES:
                equality.add(path)
    return files, delete_formats, refs, equality


@st.composite
def entries(draw: st.DrawFn) -> EntryFields:
    content = draw(st.sampled_from([0, 0, 0, 1, 2]))
    path = f"s3://b/t/data/{draw(st.integers(0, 12))}.parquet"
    reference = draw(st.none() | st.just(f"s3://b/t/data/{draw(st.integers(0, 12))}.parquet"))
    file_format = "PARQUET" if content == POSITION_DELETES else None
    return (
        draw(st.sampled_from([0, 1, 2])),
        content,
        path,
        draw(st.integers(0, 2**40)),
        reference,
        file_format,
    )


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(entries(), max_size=8), max_size=6))
def test_manifests_taken_in_columns_record_each_file_as_entry_by_entry(
    manifests: list[list[EntryFields]],
) -> None:
    # Given manifests of added, existing and deleted entries, data and delete files, some naming
    # a referenced data file, and files named again in later manifests
    files: dict[str, int] = {}
    delete_formats: dict[str, str] = {}
    refs: set[str] = set()
    equality: set[str] = set()
    # When each is taken as the plan takes it
    for i, listed in enumerate(manifests):
        parsed, read = manifest_files(lambda _uri, _data, listed=listed: (listed, None), f"m{i}.avro", b"")
        assert read is None
        add_entries(parsed, files, delete_formats, refs, equality)
    # Then every file, delete format, reference and equality delete file is what the rule entry by
    # entry gives, in order
    expected_files, expected_formats, expected_refs, expected_equality = _entry_by_entry(manifests)
    assert list(files.items()) == list(expected_files.items())
    assert list(delete_formats.items()) == list(expected_formats.items())
    assert refs == expected_refs
    assert equality == expected_equality
