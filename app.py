#!/usr/bin/env python3
"""CDK entry point: the orchestrator stack, the source/target access stacks and, when configured, the
ingestion stack, from the configuration that cdk/config.py checks.

`python app.py [-c KEY=VALUE ...]` (or `make synth`) writes the cloud assembly with no AWS
credentials, taking `-c` as the CDK CLI does; `cdk deploy` with the CDK CLI deploys it (README,
"Deploying to AWS")."""

from __future__ import annotations

import argparse
import sys

from cdk.app import build_app
from cdk.config_values import ContextError
from cdk.lambda_deps import LayerBuildError


def _context(argv: list[str]) -> dict[str, str]:
    """`-c KEY=VALUE` / `--context KEY=VALUE`, as strings, as the CDK CLI passes them."""
    parser = argparse.ArgumentParser(prog="app.py", description=__doc__)
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    given: dict[str, str] = {}
    for pair in parser.parse_args(argv).context:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ContextError(f"-c {pair!r} is not KEY=VALUE: write it as -c key=value")
        given[key] = value
    return given


if __name__ == "__main__":
    try:
        build_app(_context(sys.argv[1:])).synth()
    except (LayerBuildError, ContextError) as exc:  # one line that says why, not a jsii traceback
        sys.exit(f"synth stopped: {exc}")
