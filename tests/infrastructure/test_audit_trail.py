"""The audit trail, opt in (issue 46): `audit_trail: true` synthesizes a CloudTrail trail with S3
data events on the artifacts bucket and the target prefix into a log bucket of its own, clean
under cdk-nag and cfn-lint; `audit_trail_arn` names an existing trail and deploys none."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cdk.app import build_app
from cdk.config_values import ContextError
from tests.infrastructure.conftest import Synth
from tests.infrastructure.helpers import example_context, example_settings, resources_of

ORCH = "IcelakeOrchestrator"
EXISTING = "arn:aws:cloudtrail:us-east-1:123456789012:trail/org-audit"


def _synth(tmp_path: Path, **context: Any) -> Synth:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    outdir = tmp_path / "cdk.out"
    build_app(example_context() | context, outdir=outdir).synth()
    manifest = json.loads((outdir / "manifest.json").read_text())
    template = json.loads((outdir / f"{ORCH}.template.json").read_text())
    return Synth(outdir=outdir, manifest=manifest, templates={ORCH: template})


def test_audit_trail_true_deploys_a_clean_trail_with_the_migrations_data_events(tmp_path: Path) -> None:
    from cfnlint.api import ManualArgs, lint_file

    synth = _synth(tmp_path, audit_trail=True)
    template = synth.templates[ORCH]
    (trail,) = resources_of(template, "AWS::CloudTrail::Trail").values()
    props = trail["Properties"]
    assert props["TrailName"] == "icelake-audit" and props["EnableLogFileValidation"] is True
    assert props["KMSKeyId"]
    (selector,) = props["EventSelectors"]
    (data,) = selector["DataResources"]
    assert data["Type"] == "AWS::S3::Object"
    values = json.dumps(data["Values"])
    assert ":s3:::target-lake/warehouse/" in values  # the migration prefix
    assert "Artifacts" in values  # the artifacts bucket (its ARN, by reference)
    assert selector["ReadWriteType"] == "All"
    # the log bucket: encrypted, versioned, expiring, public access blocked, TLS only
    log_bucket = template["Resources"][props["S3BucketName"]["Ref"]]["Properties"]
    assert log_bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert log_bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert all(log_bucket["PublicAccessBlockConfiguration"].values())
    assert log_bucket["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] == 400
    assert "LoggingConfiguration" in log_bucket
    # cdk-nag: no finding, and it ran; cfn-lint: no error
    assert not synth.annotations(ORCH, "error") and not synth.annotations(ORCH, "warning")
    assert ",Compliant," in (synth.outdir / f"AwsSolutions--{ORCH}-NagReport.csv").read_text().replace(
        '"', ""
    )
    matches = lint_file(synth.outdir / f"{ORCH}.template.json", config=ManualArgs(regions=["us-east-1"]))
    errors = [m for m in matches if m.rule.id.startswith("E") or m.rule.id in {"W3005", "W3045"}]
    assert not errors, "\n".join(str(m) for m in errors)


def test_audit_trail_arn_names_an_existing_trail_and_deploys_none(tmp_path: Path) -> None:
    synth = _synth(tmp_path, audit_trail_arn=EXISTING)
    template = synth.templates[ORCH]
    assert not resources_of(template, "AWS::CloudTrail::Trail")
    assert any(o["Value"] == EXISTING for o in template["Outputs"].values())


def test_no_trail_by_default_and_not_both() -> None:
    assert example_settings().audit_trail is False and example_settings().audit_trail_arn == ""
    with pytest.raises(ContextError, match="not both"):
        example_settings(audit_trail=True, audit_trail_arn=EXISTING).check()
    with pytest.raises(ValueError, match="audit_trail_arn"):
        example_settings(audit_trail_arn="my-trail")
