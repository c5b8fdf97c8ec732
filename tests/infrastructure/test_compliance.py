"""cdk-nag (AwsSolutions) and cfn-lint on the synthesized templates."""

from __future__ import annotations

import pytest

from tests.infrastructure.conftest import Synth

STACKS = ["IcelakeOrchestrator", "IcelakeSourceAccess", "IcelakeTargetAccess"]


@pytest.mark.parametrize("stack_id", STACKS)
def test_no_unsuppressed_cdk_nag_findings(synth: Synth, stack_id: str) -> None:
    from aws_cdk.assertions import Annotations, Match

    annotations = Annotations.from_stack(synth.stacks[stack_id])
    errors = annotations.find_error("*", Match.string_like_regexp(".*"))
    warnings = annotations.find_warning("*", Match.string_like_regexp(".*"))
    assert not errors, "\n".join(f"{e.id}: {e.entry.data}" for e in errors)
    assert not warnings, "\n".join(f"{w.id}: {w.entry.data}" for w in warnings)


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
    errors = [m for m in matches if m.rule.id.startswith("E")]
    assert not errors, "\n".join(str(m) for m in errors)
