"""cdk-nag (AwsSolutions) and cfn-lint on the synthesized templates."""

from __future__ import annotations

import pytest

from tests.infrastructure.conftest import Synth

FAILING_WARNINGS = {"W3005", "W3045"}
STACKS = ["IcelakeOrchestrator", "IcelakeSourceAccess", "IcelakeTargetAccess", "IcelakeIngest"]


@pytest.mark.parametrize("stack_id", STACKS)
def test_no_unsuppressed_cdk_nag_findings(synth: Synth, stack_id: str) -> None:
    # cdk-nag attaches each unsuppressed finding to its construct as an error or warning annotation
    assert not synth.annotations(stack_id, "error"), "\n".join(synth.annotations(stack_id, "error"))
    assert not synth.annotations(stack_id, "warning"), "\n".join(synth.annotations(stack_id, "warning"))
    # and the checks did run: its report lists the compliant rules too
    report = synth.outdir / f"AwsSolutions--{stack_id}-NagReport.csv"
    assert ",Compliant," in report.read_text().replace('"', "")


@pytest.mark.parametrize("stack_id", STACKS)
def test_every_suppression_names_its_reason(synth: Synth, stack_id: str) -> None:
    found = 0
    for res in synth.templates[stack_id]["Resources"].values():
        for rule in res.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", []):
            found += 1
            assert len(rule["reason"]) >= 30, rule
    assert found


@pytest.mark.parametrize("stack_id", STACKS)
def test_cfn_lint_reports_no_errors(synth: Synth, stack_id: str) -> None:
    from cfnlint.api import ManualArgs, lint_file

    path = synth.outdir / f"{stack_id}.template.json"
    matches = lint_file(path, config=ManualArgs(regions=["us-east-1"]))
    # errors, and the warnings of things a deployment should not carry: DependsOn already implied by
    # a reference (W3005) and legacy bucket ACLs (W3045)
    errors = [m for m in matches if m.rule.id.startswith("E") or m.rule.id in FAILING_WARNINGS]
    assert not errors, "\n".join(str(m) for m in errors)


def test_an_unsuppressed_finding_is_caught() -> None:
    """The nag check above is not vacuous: a bucket without access logs or TLS is reported."""
    from aws_cdk import App, Aspects, Stack
    from aws_cdk import aws_s3 as s3
    from cdk_nag import AwsSolutionsChecks

    app = App()
    stack = Stack(app, "Bad")
    s3.Bucket(stack, "Plain")
    Aspects.of(app).add(AwsSolutionsChecks())
    assembly = app.synth()
    found = [
        e.data
        for e in assembly.get_stack_artifact("Bad").find_metadata_by_type("aws:cdk:error")
        if "AwsSolutions-S1" in str(e.data) or "AwsSolutions-S10" in str(e.data)
    ]
    assert found
