"""Orchestrator account: the migration state machine, its Lambdas and Glue job, the ledger, the
artifacts bucket, EventBridge rules, notifications, dashboard and alarms (components in
cdk/migration.py, cdk/monitoring.py and cdk/common.py; this stack only composes them)."""

from __future__ import annotations

from pathlib import Path

from constructs import Construct

from cdk.audit import AuditTrail, NamedAuditTrail
from cdk.buckets import AccessLogBucket
from cdk.common import AslStateMachine, NotificationTopic, ServiceKey
from cdk.component import IcelakeStack
from cdk.config import Settings
from cdk.migration import MigrateGlueJob, MigrationStore, StepLambdas, grant_migration_state_machine
from cdk.monitoring import MigrationMonitoring, MigrationRules
from icelake.constants import MIGRATE_ASL, MIGRATE_STATE_MACHINE
from icelake.workflow.wiring import migrate_substitutions


class OrchestratorStack(IcelakeStack):
    def __init__(self, scope: Construct, cid: str, *, settings: Settings, build_dir: Path, **kw: object):
        super().__init__(scope, cid, **kw)  # type: ignore[arg-type]
        # Notifications, logs and Glue's security configuration are encrypted with this key.
        key = ServiceKey(
            self,
            "Key",
            alias="alias/icelake-orchestrator",
            description="icelake orchestrator: SNS topic, Glue job logs and bookmarks",
            logs_sid="Glue job logs in CloudWatch Logs",
            log_groups=["/aws-glue/*"],
        ).key
        access_logs = AccessLogBucket(self, "AccessLogs").bucket
        store = MigrationStore(self, "Store", settings=settings, access_logs=access_logs)
        if settings.audit_trail:
            AuditTrail(self, "Audit", settings=settings, artifacts=store.artifacts, access_logs=access_logs)
        elif settings.audit_trail_arn:
            NamedAuditTrail(self, "Audit", arn=settings.audit_trail_arn)
        topic = NotificationTopic(
            self, "Notifications", name="icelake-notifications", key=key, emails=settings.notification_emails
        ).topic
        steps = StepLambdas(
            self,
            "Steps",
            settings=settings,
            build_dir=build_dir,
            artifacts=store.artifacts,
            ledger=store.ledger,
        )
        glue = MigrateGlueJob(
            self, "Glue", settings=settings, build_dir=build_dir, artifacts=store.artifacts, key=key
        )
        substitutions = migrate_substitutions(
            {step: fn.function_arn for step, fn in steps.functions.items()}, store.artifacts.bucket_name
        )
        # logs_id: the log group's id before components; a new one would replace the deployed group.
        workflow = AslStateMachine(
            self,
            "MigrateTables",
            name=MIGRATE_STATE_MACHINE,
            asl=MIGRATE_ASL,
            substitutions=substitutions,
            logs_id="StateMachineLogs",
        )
        grant_migration_state_machine(workflow, steps, store.artifacts)
        rules = MigrationRules(
            self, "Rules", settings=settings, state_machine=workflow.state_machine, topic=topic
        )
        MigrationMonitoring(
            self,
            "Monitoring",
            workflow=workflow,
            functions=steps.functions,
            glue_failures=rules.glue_failures,
            topic=topic,
        )
        self.substitutions = substitutions
        self.state_machine = workflow.state_machine
        self.glue_job = glue.job
