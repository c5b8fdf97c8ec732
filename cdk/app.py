"""Build the CDK app: three stacks, one per account, plus the ingestion stack in the orchestrator
account when `ingest_enabled` (by default, when `ingest_sources` are configured), with cdk-nag's
AwsSolutions checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from aws_cdk import App, Aspects, Environment, Tags

from cdk.build import REPO
from cdk.config import CONFIG_ENV, CONFIG_KEY, Settings, load_config_file

S3_LOGS_BY_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"
DEFAULT_OUTDIR = REPO / "build" / "cdk.out"  # under build/, which git ignores


def _cdk_json_context() -> dict[str, Any]:
    path = REPO / "cdk.json"
    return dict(json.loads(path.read_text()).get("context", {})) if path.exists() else {}


def build_app(
    context: dict[str, Any] | None = None, outdir: str | Path | None = None, config: str | Path | None = None
) -> App:
    """The app; `context` overrides every other source (tests, `python app.py -c`), `config` names a
    file of context keys (else `-c config=PATH` or ICELAKE_CONFIG), `outdir` defaults to CDK_OUTDIR
    or build/cdk.out."""
    if outdir is None and not os.environ.get("CDK_OUTDIR"):
        outdir = DEFAULT_OUTDIR
    # The CDK CLI passes cdk.json's context (and its -c keys) itself; `python app.py` reads cdk.json here.
    base = {} if os.environ.get("CDK_CONTEXT_JSON") else _cdk_json_context()
    overrides = dict(context or {})
    if config is not None:
        overrides[CONFIG_KEY] = str(config)
    # Access logs arrive by bucket policy, not the legacy LogDeliveryWrite ACL (cfn-lint W3045).
    overrides[S3_LOGS_BY_POLICY] = True
    app = App(context=base, post_cli_context=overrides, outdir=str(outdir) if outdir else None)
    # The file of `-c config=PATH` (or ICELAKE_CONFIG) is the lowest layer: any other source overrides it.
    path = app.node.try_get_context(CONFIG_KEY) or os.environ.get(CONFIG_ENV)
    if path:
        for key, value in load_config_file(path).items():
            if app.node.try_get_context(key) is None:
                app.node.set_context(key, value)
    settings = Settings.from_context(app.node)
    # The stacks and cdk-nag load their jsii modules (seconds): a context mistake is told before that.
    from cdk_nag import AwsSolutionsChecks

    from cdk.access import SourceAccessStack, TargetAccessStack
    from cdk.aspects import NoRedundantDependsOn
    from cdk.ingest import IngestStack
    from cdk.orchestrator import OrchestratorStack

    build_dir = Path(app.outdir).resolve().parent / "cdk-bundles"
    orchestrator_env = Environment(account=settings.orchestrator_account, region=settings.orchestrator_region)

    OrchestratorStack(
        app,
        "IcelakeOrchestrator",
        settings=settings,
        build_dir=build_dir,
        env=orchestrator_env,
        description="icelake: migrate Iceberg tables across accounts (Step Functions, Lambda, Glue)",
    )
    SourceAccessStack(
        app,
        "IcelakeSourceAccess",
        settings=settings,
        env=Environment(account=settings.source_account, region=settings.source_region),
        description="icelake: read-only role for the orchestrator in the source account",
    )
    TargetAccessStack(
        app,
        "IcelakeTargetAccess",
        settings=settings,
        env=Environment(account=settings.target_account, region=settings.target_region),
        description="icelake: target bucket, key, Glue databases and write role in the target account",
    )
    if settings.ingest_enabled:
        IngestStack(
            app,
            "IcelakeIngest",
            settings=settings,
            build_dir=build_dir,
            env=orchestrator_env,
            description="icelake: scheduled API ingestion into SCD2 Iceberg tables (Step Functions, Glue)",
        )
    Tags.of(app).add("project", "icelake")
    Aspects.of(app).add(NoRedundantDependsOn())
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app
