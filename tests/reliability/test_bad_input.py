"""Bad input and a hostile environment, through the `icelake migrate path` command: every case
ends in exactly one line on stderr that names what was wrong and what to do, never a traceback
or "unexpected error", and neither the source nor (when the plan refused) the target is written.

The environment is reproduced for real where this machine allows it: a regular file as the
target, /sys (which refuses mkdir even to root), a 64 KiB tmpfs that fills up, a shell with no AWS
credentials, a closed port as the S3 endpoint.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from typer.testing import CliRunner

from icelake.cli import app


@dataclass
class Case:
    """`prepare(tmp_path, metadata)` damages the input and returns (metadata, target location)."""

    prepare: Callable[[Path, str], tuple[str, str]]
    expected: str  # a fragment of the one line on stderr
    env: dict[str, str | None] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    target_untouched: bool = True


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def _source(root: Path) -> str:
    root.mkdir(parents=True)
    catalog = SqlCatalog("c", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=_rows([1]).schema)
    table.append(_rows([1, 2]))
    table.append(_rows([3]))
    return catalog.load_table("db.t").metadata_location


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file://"))


def _files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if p.is_file())


def _target_is_a_file(tmp: Path, meta: str) -> tuple[str, str]:
    (tmp / "taken").write_text("someone's notes\n")
    return meta, str(tmp / "taken")


def _target_under_a_file(tmp: Path, meta: str) -> tuple[str, str]:
    (tmp / "taken").write_text("someone's notes\n")
    return meta, str(tmp / "taken" / "t")


def _sysfs_target(tmp: Path, meta: str) -> tuple[str, str]:
    return meta, "/sys/icelake-test-target/t"


@contextlib.contextmanager
def _tiny_tmpfs(mountpoint: Path) -> Iterator[None]:
    mountpoint.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mountpoint)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here to fill a disk: {mounted.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(mountpoint)], check=True)


def _big_source(tmp: Path, meta: str) -> tuple[str, str]:
    """A data file far larger than the 64 KiB target file system."""
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp}/src/catalog.db", warehouse=f"file://{tmp}/src")
    table = catalog.load_table("db.t")
    table.append(pa.table({"id": pa.array(range(200_000), pa.int64())}))
    return catalog.load_table("db.t").metadata_location, str(tmp / "full" / "t")


def _wrong_typed_location(tmp: Path, meta: str) -> tuple[str, str]:
    doc = json.loads(_local(meta).read_text())
    doc["location"] = 123
    edited = tmp / "edited.metadata.json"
    edited.write_text(json.dumps(doc))
    return str(edited), str(tmp / "dst")


def _metadata_is_a_directory(tmp: Path, meta: str) -> tuple[str, str]:
    return str(_local(meta).parent), str(tmp / "dst")


def _metadata_missing(tmp: Path, meta: str) -> tuple[str, str]:
    return str(_local(meta).with_name("00099-gone.metadata.json")), str(tmp / "dst")


def _metadata_not_json(tmp: Path, meta: str) -> tuple[str, str]:
    (tmp / "notes.metadata.json").write_text("this is not json")
    return str(tmp / "notes.metadata.json"), str(tmp / "dst")


def _data_file_grew(tmp: Path, meta: str) -> tuple[str, str]:
    victim = _files(tmp / "src", "*.parquet")[0]
    victim.write_bytes(victim.read_bytes() + b"x")
    return meta, str(tmp / "dst")


def _manifest_magic_flipped(tmp: Path, meta: str) -> tuple[str, str]:
    manifest = next(p for p in _files(tmp / "src", "*.avro") if not p.name.startswith("snap-"))
    manifest.write_bytes(b"Obj\x02" + manifest.read_bytes()[4:])
    return meta, str(tmp / "dst")


def _data_outside_the_location(tmp: Path, meta: str) -> tuple[str, str]:
    import pyarrow.parquet as pq

    outside = tmp / "elsewhere" / "x"
    outside.mkdir(parents=True)
    pq.write_table(_rows([7]), outside / "part-0.parquet")
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp}/src/catalog.db", warehouse=f"file://{tmp}/src")
    catalog.load_table("db.t").add_files([f"file://{outside}/part-0.parquet"])
    return catalog.load_table("db.t").metadata_location, str(tmp / "dst")


def _s3_source(tmp: Path, meta: str) -> tuple[str, str]:
    return "s3://no-such-lake/db/t/metadata/00001.metadata.json", str(tmp / "dst")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


NO_CREDENTIALS: dict[str, str | None] = {
    "AWS_ACCESS_KEY_ID": None,
    "AWS_SECRET_ACCESS_KEY": None,
    "AWS_SESSION_TOKEN": None,
    "AWS_PROFILE": None,
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
    "AWS_CONFIG_FILE": "/nonexistent/config",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI": None,
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None,
    "AWS_WEB_IDENTITY_TOKEN_FILE": None,
    "AWS_DEFAULT_REGION": "us-east-1",
}

CASES: dict[str, Case] = {
    "target is a file": Case(_target_is_a_file, "taken is a file, not a directory; choose a target"),
    "target under a file": Case(_target_under_a_file, "taken is a file, not a directory; choose a target"),
    "target not writable": Case(_sysfs_target, "permission denied on /sys/icelake-test-target"),
    "disk full": Case(_big_source, "no space left on the device holding /tmp/", target_untouched=False),
    "location of the wrong type": Case(
        _wrong_typed_location, "field 'location': input should be a valid string, found int"
    ),
    "metadata is a directory": Case(_metadata_is_a_directory, "is a directory; pass a file"),
    "metadata does not exist": Case(_metadata_missing, "is not an Iceberg table metadata file (it does not"),
    "metadata is not JSON": Case(_metadata_not_json, "is not an Iceberg table metadata file (not JSON"),
    "data file of the wrong size": Case(_data_file_grew, "whose size differs from the metadata"),
    "manifest with a flipped magic": Case(_manifest_magic_flipped, "is not an Avro file"),
    "data outside the table location": Case(_data_outside_the_location, "elsewhere/x (1 file(s)); add --map"),
    "no AWS credentials": Case(
        _s3_source,
        "no AWS credentials found (s3://no-such-lake/db/t/metadata/00001.metadata.json)",
        env=NO_CREDENTIALS,
    ),
    "unreachable endpoint": Case(
        _s3_source,
        "after retries; check the network",
        env={
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{_closed_port()}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "ICELAKE_AWS_MAX_ATTEMPTS": "2",
        },
    ),
    "session longer than allowed": Case(
        _target_is_a_file, "--session-duration", args=("--session-duration", "50000")
    ),
}


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in _files(root, "*")}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_ends_in_one_line_that_says_what_to_do(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    meta = _source(tmp_path / "src")
    metadata, target = case.prepare(tmp_path, meta)
    source_before = _tree(tmp_path / "src")
    full = tmp_path / "full"
    mounted = _tiny_tmpfs(full) if name == "disk full" else contextlib.nullcontext()
    with mounted:
        result = CliRunner().invoke(
            app,
            ["migrate", "path", "--metadata", metadata, "--target-location", target, *case.args],
            env=case.env,
        )
        target_files = _files(Path(target), "*") if Path(target).is_dir() else []

    lines = [line for line in result.stderr.splitlines() if not line.startswith("[icelake] ")]  # status
    assert result.exit_code in (1, 2), result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("icelake: error: "), lines[0]
    assert "unexpected error" not in lines[0] and "Traceback" not in result.stderr
    assert case.expected in lines[0], lines[0]
    assert _tree(tmp_path / "src") == source_before  # the source is never written
    if case.target_untouched:
        assert target_files == []
