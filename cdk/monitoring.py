"""The migration workflow's EventBridge rules (the scheduled sync and verify, start on request
events, notifications of reports and failures) and its alarms and dashboard. `OrchestratorStack`
composes them with the components of cdk/migration.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from cdk.common import AslStateMachine, sns_alarm
from cdk.component import Component
from cdk.config import Settings
from icelake.constants import EVENT_SOURCE, GLUE_MIGRATE_JOB
from icelake.workflow.models import FAILED_STATUSES, FILES_PRUNED_METRIC, OUTCOME_METRICS
from icelake.workflow.wiring import METRICS_NAMESPACE, MIGRATE_SERVICE

# Source of the events that start a migration (the Report step's own events use EVENT_SOURCE, so a
# finished run can never start another one).
REQUEST_EVENT_SOURCE = "icelake.request"


class MigrationRules(Component):
    """EventBridge: the scheduled incremental sync, start on request events, and the notifications
    of run reports and of failed executions and Glue runs."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        settings: Settings,
        state_machine: sfn.IStateMachine,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, cid)
        # Scheduled incremental sync: only with a `sync_request` (validated at synth, mode incremental).
        if settings.sync_request is not None:
            _scheduled_run(
                self,
                "IncrementalSync",
                rule=("icelake-incremental-sync", "Starts an incremental sync migration on a schedule"),
                schedule=(settings.sync_schedule, settings.sync_enabled),
                state_machine=state_machine,
                request=settings.sync_request,
            )
            # Scheduled verify (day 2): the same tables checked again, nothing written; with
            # repair_on_damage, mode repair writes the damaged files again from the source.
            mode = "repair" if settings.repair_on_damage else "verify"
            _scheduled_run(
                self,
                "ScheduledVerify",
                rule=(
                    "icelake-verify",
                    "Verifies the migrated and promoted targets on a schedule (mode verify)",
                ),
                schedule=(settings.verify_schedule, settings.verify_enabled),
                state_machine=state_machine,
                request={**settings.sync_request, "mode": mode},
            )
        # Any event with source icelake.request starts a migration with the event's detail as request.
        events.Rule(
            self,
            "StartOnEvent",
            rule_name="icelake-start-migration",
            description=f"Starts a migration for each event with source {REQUEST_EVENT_SOURCE}",
            event_pattern=events.EventPattern(source=[REQUEST_EVENT_SOURCE]),
            targets=[
                targets.SfnStateMachine(
                    state_machine,
                    input=events.RuleTargetInput.from_event_path("$.detail"),
                    retry_attempts=2,
                )
            ],
        )

        # Completion and failure, each to the topic: the Report step's events, executions that failed
        # outright, Glue runs.
        def notify(cid: str, name: str, pattern: events.EventPattern) -> events.Rule:
            return events.Rule(
                self, cid, rule_name=name, event_pattern=pattern, targets=[targets.SnsTopic(topic)]
            )

        notify("RunReports", "icelake-run-reports", events.EventPattern(source=[EVENT_SOURCE]))
        executions = {
            "status": ["FAILED", "TIMED_OUT", "ABORTED"],
            "stateMachineArn": [state_machine.state_machine_arn],
        }
        notify(
            "ExecutionFailures",
            "icelake-execution-failures",
            events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail=executions,
            ),
        )
        glue_runs = {"jobName": [GLUE_MIGRATE_JOB], "state": ["FAILED", "TIMEOUT", "ERROR"]}
        self.glue_failures = notify(
            "GlueFailures",
            "icelake-glue-failures",
            events.EventPattern(source=["aws.glue"], detail_type=["Glue Job State Change"], detail=glue_runs),
        )


class MigrationMonitoring(Component):
    """The alarms (to the topic) and the dashboard of the migration workflow."""

    def __init__(
        self,
        scope: Construct,
        cid: str,
        *,
        workflow: AslStateMachine,
        functions: dict[str, lambda_.Function],
        glue_failures: events.Rule,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, cid)
        period = Duration.minutes(5)
        self.alarms: list[cw.Alarm] = []

        def alarm(cid: str, name: str, metric: cw.Metric | cw.MathExpression, description: str) -> None:
            self.alarms.append(
                sns_alarm(self, cid, name=name, metric=metric, description=description, topic=topic)
            )

        sm = workflow.state_machine
        failed = sm.metric_failed(period=period, statistic="Sum")
        timed_out = sm.metric_timed_out(period=period, statistic="Sum")
        alarm(
            "ExecutionsFailedAlarm",
            "icelake-executions-failed",
            workflow.failed_executions(period),
            "A migration execution failed, timed out or was aborted: open it in the Step Functions console.",
        )
        glue_failed = cw.Metric(
            namespace="Glue",
            metric_name="glue.driver.aggregate.numFailedTasks",
            dimensions_map={"JobName": GLUE_MIGRATE_JOB, "JobRunId": "ALL", "Type": "count"},
            period=period,
            statistic="Sum",
        )
        alarm(
            "GlueFailuresAlarm",
            "icelake-glue-failed-tasks",
            glue_failed,
            "Spark tasks of the Glue copy job failed (Spark retries tasks; see icelake-glue-job-failed "
            "for failed runs).",
        )
        # A Glue job run that failed, timed out or errored: the rule that forwards such events to the
        # topic publishes how often it matched.
        glue_runs_failed = cw.Metric(
            namespace="AWS/Events",
            metric_name="TriggeredRules",
            dimensions_map={"RuleName": glue_failures.rule_name},
            period=period,
            statistic="Sum",
            label="Glue job runs failed",
        )
        alarm(
            "GlueJobFailedAlarm",
            "icelake-glue-job-failed",
            glue_runs_failed,
            "A run of the Glue copy job failed, timed out or errored: the table it copied was rolled back.",
        )
        # Tables a finished run left failed, rolled back, diverged, dropped, busy or damaged, as the
        # Report step publishes them (a verify run's damaged tables too).
        failed_tables = {
            f"f_{status}": self._outcome_metric(OUTCOME_METRICS[status], status, period)
            for status in FAILED_STATUSES
        }
        alarm(
            "TablesFailedAlarm",
            "icelake-tables-failed",
            cw.MathExpression(
                expression=" + ".join(failed_tables),
                using_metrics=failed_tables,
                period=period,
                label="Tables failed or damaged",
            ),
            "A run left tables failed, rolled back, diverged, dropped, busy or damaged (mode verify): "
            "see its report.json and the run's event.",
        )
        errors = {step: fn.metric_errors(period=period, statistic="Sum") for step, fn in functions.items()}
        throttles = {
            step: fn.metric_throttles(period=period, statistic="Sum") for step, fn in functions.items()
        }
        alarm(
            "LambdaErrorsAlarm",
            "icelake-lambda-errors",
            _summed(errors, "e", period, "Step Lambda errors"),
            "A step Lambda raised: the workflow retried or rolled the table back; see the function's logs.",
        )
        alarm(
            "LambdaThrottlesAlarm",
            "icelake-lambda-throttles",
            _summed(throttles, "t", period, "Step Lambda throttles"),
            "Step Lambdas are throttled: lower the request's concurrency or raise the account's "
            "Lambda quota.",
        )
        dashboard = cw.Dashboard(self, "Dashboard", dashboard_name="icelake-migrations")
        dashboard.add_widgets(
            cw.GraphWidget(
                title="Executions",
                left=[
                    sm.metric_started(period=period),
                    sm.metric_succeeded(period=period),
                    failed,
                    timed_out,
                ],
                width=12,
            ),
            cw.GraphWidget(
                title="Glue failed runs and tasks", left=[glue_runs_failed, glue_failed], width=12
            ),
        )
        dashboard.add_widgets(
            cw.GraphWidget(title="Lambda errors", left=list(errors.values()), width=8),
            cw.GraphWidget(title="Lambda throttles", left=list(throttles.values()), width=8),
            cw.GraphWidget(
                title="Lambda duration (p95)",
                left=[fn.metric_duration(period=period, statistic="p95") for fn in functions.values()],
                width=8,
            ),
        )
        dashboard.add_widgets(*self._outcome_widgets(period))
        dashboard.add_widgets(cw.AlarmStatusWidget(alarms=self.alarms, title="Alarms", width=24))

    @staticmethod
    def _outcome_metric(name: str, label: str, period: Duration) -> cw.Metric:
        """A per-table outcome count of finished runs, as the Report step publishes it (EMF)."""
        return cw.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=name,
            dimensions_map={"service": MIGRATE_SERVICE},
            period=period,
            statistic="Sum",
            label=label,
        )

    @classmethod
    def _outcome_widgets(cls, period: Duration) -> list[cw.IWidget]:
        """Per-table outcomes of finished runs, as the Report step publishes them (EMF)."""

        def metric(name: str, label: str) -> cw.Metric:
            return cls._outcome_metric(name, label, period)

        good = ("migrated", "in_sync", "promoted", "dry_run", "verified")
        return [
            cw.GraphWidget(
                title="Tables that ended well",
                left=[metric(OUTCOME_METRICS[s], s) for s in good],
                width=8,
            ),
            cw.GraphWidget(
                title="Tables left alone or failed",
                left=[metric(m, s) for s, m in OUTCOME_METRICS.items() if s not in good],
                width=8,
            ),
            cw.GraphWidget(
                title="Target files pruned", left=[metric(FILES_PRUNED_METRIC, "pruned")], width=8
            ),
        ]


def _scheduled_run(
    scope: Construct,
    cid: str,
    *,
    rule: tuple[str, str],
    schedule: tuple[str, bool],
    state_machine: sfn.IStateMachine,
    request: dict[str, Any],
) -> events.Rule:
    """A rule that starts the workflow with `request` on `schedule` (expression, enabled); `rule`
    is its name and description."""
    name, description = rule
    expression, enabled = schedule
    return events.Rule(
        scope,
        cid,
        rule_name=name,
        description=description,
        schedule=events.Schedule.expression(expression),
        enabled=enabled,
        targets=[
            targets.SfnStateMachine(
                state_machine, input=events.RuleTargetInput.from_object(request), retry_attempts=2
            )
        ],
    )


def _summed(
    metrics: Mapping[str, cw.IMetric], prefix: str, period: Duration, label: str
) -> cw.MathExpression:
    """One line that adds up `metrics` (each named `<prefix>_<key>` in the expression)."""
    return cw.MathExpression(
        expression=" + ".join(f"{prefix}_{k}" for k in metrics),
        using_metrics={f"{prefix}_{k}": m for k, m in metrics.items()},
        period=period,
        label=label,
    )
