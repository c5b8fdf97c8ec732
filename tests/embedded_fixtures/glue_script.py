"""Test Glue script: writes its arguments to --output, or raises with --mode raise."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path


class GlueTestFailure(RuntimeError):
    pass


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="glue_script")
    parser.add_argument("--JOB_NAME", required=True)
    parser.add_argument("--JOB_RUN_ID", required=True)
    parser.add_argument("--mode", choices=("write", "raise"), default="write")
    parser.add_argument("--output")
    parser.add_argument("--message", default="")
    args = parser.parse_args(list(argv))  # strict: unexpected arguments fail the run
    if args.mode == "raise":
        raise GlueTestFailure(f"job {args.JOB_NAME} failed on purpose")
    Path(args.output).write_text(json.dumps(vars(args)))
