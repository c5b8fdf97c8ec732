"""Glue jobs (default and non-overridable arguments, connections, Glue Studio's catalog nodes, and
the script at ScriptLocation when the role may read it) and crawlers (their targets)."""

from __future__ import annotations

from functools import partial
from typing import Any

from icelake.assess.consumers.code import read_text
from icelake.assess.consumers.context import ScanContext, all_pages, leaves
from icelake.assess.consumers.model import Consumer


def _all(ctx: ScanContext, consumer: Consumer, operation: str, field: str) -> list[dict[str, Any]]:
    glue = ctx.client("glue")
    pages = ctx.attempt(
        consumer,
        f"every Glue {consumer.kind.removeprefix('glue_')}",
        f"glue:{operation}",
        partial(all_pages, glue, _SNAKE[operation]),
    )
    return [item for page in pages or [] for item in page.get(field, [])]


_SNAKE = {"GetJobs": "get_jobs", "GetCrawlers": "get_crawlers"}


def scan_jobs(ctx: ScanContext) -> None:
    jobs = _all(ctx, Consumer(kind="glue_job", name="*"), "GetJobs", "Jobs")
    ctx.each(jobs, lambda job: _job(ctx, job))


def _job(ctx: ScanContext, job: dict[str, Any]) -> None:
    consumer = Consumer(kind="glue_job", name=job["Name"], arn=ctx.arn("glue", f"job/{job['Name']}"))
    ctx.counted(consumer)
    for field, what in (
        ("DefaultArguments", "argument"),
        ("NonOverridableArguments", "non-overridable argument"),
    ):
        for name, value in (job.get(field) or {}).items():
            ctx.scan(consumer, f"{what} {name}", str(value))
    for name in (job.get("Connections") or {}).get("Connections") or []:
        ctx.scan(consumer, f"connection {name}", str(name))
    _studio_nodes(ctx, consumer, job.get("CodeGenConfigurationNodes") or {})
    script = (job.get("Command") or {}).get("ScriptLocation")
    if script and script.lower().startswith(("s3://", "s3a://", "s3n://")):
        text = read_text(ctx, consumer, script, f"the job's script {script}")
        if text is not None:
            ctx.scan(consumer, "script", text, lines=True)


def _studio_nodes(ctx: ScanContext, consumer: Consumer, nodes: dict[str, Any]) -> None:
    """A visual (Glue Studio) job's nodes: a catalog source or target names Database and Table;
    any other string (an S3 path) is scanned as text."""
    for node_id, node in nodes.items():
        for kind, spec in (node or {}).items():
            if isinstance(spec, dict) and spec.get("Database") and spec.get("Table"):
                ctx.catalog_table(consumer, f"node {node_id} ({kind})", spec["Database"], spec["Table"])
            for path, text in leaves(spec, kind):
                if "://" in text:
                    ctx.scan(consumer, f"node {node_id} ({path})", text)


def scan_crawlers(ctx: ScanContext) -> None:
    for crawler in _all(ctx, Consumer(kind="glue_crawler", name="*"), "GetCrawlers", "Crawlers"):
        name = crawler["Name"]
        consumer = Consumer(kind="glue_crawler", name=name, arn=ctx.arn("glue", f"crawler/{name}"))
        ctx.counted(consumer)
        targets = crawler.get("Targets") or {}
        for i, target in enumerate(targets.get("CatalogTargets") or []):
            for table in target.get("Tables") or []:
                ctx.catalog_table(
                    consumer, f"target CatalogTargets[{i}]", target.get("DatabaseName", ""), table
                )
        for path, text in leaves({k: v for k, v in targets.items() if k != "CatalogTargets"}):
            ctx.scan(consumer, f"target {path}", text)
