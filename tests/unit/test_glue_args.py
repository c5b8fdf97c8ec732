"""Both Glue scripts resolve their arguments through one function, in AWS Glue and locally.

In Glue the arguments go through `awsglue.utils.getResolvedOptions(args, options)`, which parses
`args[1:]` (it expects sys.argv, script name first). The stand-in below does exactly that, as the
published aws-glue-libs source does; scd2_merge used to hand it argv without the script name, so
its first argument (`--mode`) was dropped."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
GET_RESOLVED_OPTIONS = textwrap.dedent(
    """
    import argparse

    def getResolvedOptions(args, options):
        parser = argparse.ArgumentParser()
        for option in options:
            parser.add_argument("--" + option, required=True)
        parsed, _extra = parser.parse_known_args(args[1:])  # args[0] is the script's name
        return vars(parsed)
    """
)


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_glue_{name}", REPO / "glue_jobs" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["glue", "local"])
def where(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "glue":
        (tmp_path / "awsglue").mkdir()
        (tmp_path / "awsglue" / "__init__.py").write_text("")
        (tmp_path / "awsglue" / "utils.py").write_text(GET_RESOLVED_OPTIONS)
        monkeypatch.syspath_prepend(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("awsglue")]:
            monkeypatch.delitem(sys.modules, name)
    yield str(request.param)
    if request.param == "glue":
        # The stand-in imported here must not outlive the test: a later Glue job of the embedded
        # AWS in this worker would take itself for AWS Glue (monkeypatch restores only what it
        # removed, after this).
        for name in [m for m in sys.modules if m.startswith("awsglue")]:
            del sys.modules[name]


def test_the_scd2_merge_arguments_resolve_whole(where: str) -> None:
    argv = ["--mode", "maintain", "--spec", '{"x": 1}', "--retain-last", "5", "--JOB_ID", "j_1"]
    args = _script("scd2_merge").parse_args(argv)
    assert (args.mode, args.spec, args.retain_last, args.batch_uris) == ("maintain", '{"x": 1}', "5", "[]")


def test_the_migrate_table_arguments_resolve_whole(where: str) -> None:
    argv = [
        "--source-metadata",
        "s3://a/t/m.json",
        "--target-location",
        "s3://b/t",
        "--map",
        "s3://a/x=s3://b/x",
    ]
    args = _script("migrate_table").parse_args([*argv, "--overwrite", "true"])
    assert (args.source_metadata, args.target_location) == ("s3://a/t/m.json", "s3://b/t")
    assert args.map == [("s3://a/x", "s3://b/x")] and args.overwrite is True


def test_a_missing_required_argument_is_named(where: str) -> None:
    with pytest.raises(SystemExit):
        _script("migrate_table").parse_args(["--target-location", "s3://b/t"])
