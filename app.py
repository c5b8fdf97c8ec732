#!/usr/bin/env python3
"""CDK entry point: the orchestrator stack and the source/target access stacks, from cdk.json context.

`python app.py` (or `make synth`) writes the cloud assembly with no AWS credentials; `cdk deploy`
with the CDK CLI deploys it (see README, "Deploying to AWS")."""

from __future__ import annotations

from cdk.app import build_app

if __name__ == "__main__":
    build_app().synth()
