"""Every SNS topic an alarm publishes to lets CloudWatch alarms of this account publish, and still
refuses anything not over TLS (enforce_ssl gives the topic a policy, which must name every publisher)."""

from __future__ import annotations

from typing import Any

from tests.infrastructure.conftest import Synth
from tests.infrastructure.helpers import as_list, flat, resources_of


def _stack_account(synth: Synth, stack: str) -> str:
    return str(synth.manifest["artifacts"][stack]["environment"]).split("/")[2]


def _alarm_topics(template: dict[str, Any]) -> set[str]:
    return {
        action["Ref"]
        for alarm in resources_of(template, "AWS::CloudWatch::Alarm").values()
        for action in alarm["Properties"].get("AlarmActions", [])
    }


def _topic_statements(template: dict[str, Any], topic: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in resources_of(template, "AWS::SNS::TopicPolicy").values()
        if {"Ref": topic} in policy["Properties"]["Topics"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_alarm_topics_let_cloudwatch_alarms_of_this_account_publish_over_tls_only(synth: Synth) -> None:
    checked = []
    for stack, template in synth.templates.items():
        for topic in sorted(_alarm_topics(template)):
            assert resources_of(template, "AWS::SNS::Topic").get(topic), f"{stack}: {topic} is not a topic"
            statements = _topic_statements(template, topic)
            cloudwatch = [
                s
                for s in statements
                if s["Effect"] == "Allow"
                and "cloudwatch.amazonaws.com" in as_list(s.get("Principal", {}).get("Service"))
            ]
            assert len(cloudwatch) == 1, f"{stack}: {topic} does not let CloudWatch alarms publish"
            [allow] = cloudwatch
            assert as_list(allow["Action"]) == ["sns:Publish"]
            assert as_list(allow["Resource"]) == [{"Ref": topic}]
            # only alarms of this account: a confused deputy elsewhere cannot publish through CloudWatch
            source_arn = allow["Condition"]["ArnLike"]["aws:SourceArn"]
            assert ":cloudwatch:" in str(source_arn) and ":alarm:*" in str(source_arn)
            account = allow["Condition"]["StringEquals"]["aws:SourceAccount"]
            assert account in ({"Ref": "AWS::AccountId"}, _stack_account(synth, stack)), account
            assert flat(account) in flat(source_arn)
            # enforce_ssl is kept
            assert any(
                s["Effect"] == "Deny"
                and s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
                for s in statements
            ), f"{stack}: {topic} lost its TLS-only statement"
            checked.append(stack)
    assert {"IcelakeOrchestrator", "IcelakeIngest"} <= set(checked)
