#!/usr/bin/env python3
"""CDK entry point: the orchestrator stack and the source/target access stacks, from cdk.json context.

`python app.py` (or `make synth`) writes the cloud assembly with no AWS credentials; `cdk deploy`
with the CDK CLI deploys it (see README, "Deploying to AWS")."""

from __future__ import annotations

import sys

from cdk.app import build_app
from cdk.config import ContextError
from cdk.lambda_deps import LayerBuildError

if __name__ == "__main__":
    try:
        build_app().synth()
    except (LayerBuildError, ContextError) as exc:  # one line that says why, not a jsii traceback
        sys.exit(f"synth stopped: {exc}")
