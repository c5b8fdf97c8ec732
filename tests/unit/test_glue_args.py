"""Both Glue scripts resolve their arguments through icelake.glue_args, the same way in AWS Glue
(awsglue's getResolvedOptions, which skips its first item as the script name) and locally (argparse)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from glue_jobs import migrate_table, scd2_merge


def get_resolved_options(args: list[str], options: list[str]) -> dict[str, Any]:
    """awsglue.utils.getResolvedOptions as aws-glue-libs defines it: every named option required,
    read from args[1:] (args is meant to be sys.argv), unknown ones ignored."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--JOB_NAME", required=False)
    for option in options:
        parser.add_argument(f"--{option}", required=True)
    parsed, _extra = parser.parse_known_args(args[1:])
    return vars(parsed)


SPEC = '{"table": "db.t", "keys": ["id"]}'
MIGRATE = ["--source-metadata", "s3://a/t/metadata/1.metadata.json", "--target-location", "s3://b/t"]
MIGRATE += ["--map", "s3://a/x=s3://b/x", "--overwrite", "true", "--run-id", "r1", "--JOB_NAME", "j"]
MERGE = ["--mode", "merge", "--spec", SPEC, "--batch_uris", '["s3://raw/r/"]', "--retain_last", "3"]


@pytest.mark.parametrize(("script", "argv"), [(migrate_table, MIGRATE), (scd2_merge, MERGE)])
def test_glue_and_local_resolution_agree_when_the_first_argument_is_an_option(
    script: Any, argv: list[str]
) -> None:
    # Given the arguments Glue passes after the script name, starting with an option as they do
    # When the script resolves them as in Glue and as locally
    in_glue = script.parse_args(argv, resolver=get_resolved_options)
    local = script.parse_args(argv)

    # Then nothing is lost to getResolvedOptions skipping its first item, and both read the same
    assert vars(in_glue) == vars(local)


def test_the_glue_resolver_gets_the_script_name_first_from_both_scripts() -> None:
    seen: list[list[str]] = []

    def recording(args: list[str], options: list[str]) -> dict[str, Any]:
        seen.append(args)
        return get_resolved_options(args, options)

    migrate_table.parse_args(MIGRATE, resolver=recording)
    scd2_merge.parse_args(MERGE, resolver=recording)
    assert [a[0] for a in seen] == ["migrate_table", "scd2_merge"]
    assert [a[1:] for a in seen] == [MIGRATE, MERGE]


def test_a_missing_required_argument_fails_in_glue_with_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        scd2_merge.parse_args(["--mode", "merge"], resolver=get_resolved_options)
    assert "--spec" in capsys.readouterr().err
