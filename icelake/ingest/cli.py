"""`icelake ingest ...`: the ingestion workflow on this machine."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from icelake.console import stdout_console
from icelake.ingest.local_run import IngestRunSummary

ingest_app = typer.Typer(no_args_is_help=True, help="Ingest HTTP APIs into SCD2 Iceberg tables.")
err = Console(stderr=True)
TOKEN = "local-demo-token"


def summary_table(summaries: list[IngestRunSummary], table: str) -> Table:
    out = Table(title=f"SCD2 runs into {table}")
    for column in ("run", "status", "fetched", "batches", "inserted", "closed", "deleted", "current", "rows"):
        out.add_column(column, justify="left" if column == "status" else "right")
    for s in summaries:
        out.add_row(
            str(s.run),
            s.status,
            str(s.records_fetched),
            str(s.batches_merged),
            str(s.inserted),
            str(s.closed),
            str(s.deleted),
            str(s.current_rows),
            str(s.total_rows),
        )
    return out


@ingest_app.command("run")
def ingest_run(
    runs: Annotated[int, typer.Option(min=1, help="Executions of the state machine.")] = 3,
    records: Annotated[int, typer.Option(min=1, help="Records the local API serves at first.")] = 200,
    change_rate: Annotated[
        float, typer.Option(min=0.0, max=0.5, help="Share of keys changed (and inserted) per run.")
    ] = 0.1,
    page_size: Annotated[int, typer.Option(min=1, help="Records per API page.")] = 50,
    table: Annotated[
        str, typer.Option(help="catalog.database.table of the SCD2 table.")
    ] = "local.demo.customers",
    warehouse: Annotated[
        Path | None, typer.Option(help="Iceberg warehouse directory (default: a new temp dir).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the generated data.")] = 7,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run summaries as JSON.")] = False,
) -> None:
    """Run the ingestion workflow locally: an HTTP API on 127.0.0.1 serving generated records that
    change from run to run, embedded AWS (raw bucket, Lambdas, the real state machine) and local
    Spark + Iceberg for the SCD2 table. Exits 1 when a run fails."""
    from icelake.ingest.deploy import deploy_ingest_workflow
    from icelake.ingest.local_api import ApiServer, GeneratedSource, serve_pages
    from icelake.ingest.local_run import API_SECRET, demo_fetch_config, demo_spec, run_ingest, summarise
    from icelake.local.embedded import start_embedded_aws
    from icelake.local.spark import local_spark

    try:
        spec = demo_spec(table)
    except ValueError as exc:
        err.print(f"icelake: error: {exc}", highlight=False)
        raise typer.Exit(2) from exc
    repo = Path(__file__).resolve().parents[2]
    where = str(warehouse or tempfile.mkdtemp(prefix="icelake-ingest-"))
    source = GeneratedSource(initial=records, seed=seed, change_rate=change_rate)
    summaries: list[IngestRunSummary] = []
    noise = io.StringIO()  # the Glue script's JSON report lines; the summary table says it better
    with ApiServer(serve_pages(source.records, token=TOKEN)) as api, start_embedded_aws(repo):
        err.print(f"local API {api.url}/customers; warehouse {where}", highlight=False)
        spark = local_spark({table.split(".")[0]: where}, app_name="icelake-ingest")
        deployment = deploy_ingest_workflow(
            local_warehouse=where, secrets={API_SECRET: json.dumps({"token": TOKEN})}
        )
        fetch = demo_fetch_config(api.url + "/customers", page_size=page_size)
        for number in range(1, runs + 1):
            if number > 1:
                source.advance()
            err.print(f"run {number}/{runs} ...", highlight=False)
            with contextlib.redirect_stdout(noise):
                result = run_ingest(deployment.state_machine_arn, fetch, spec, name=f"ingest-run-{number}")
            summary = summarise(spark, table, number, result)
            summaries.append(summary)
            if summary.status != "SUCCEEDED":
                break
    if as_json:
        sys.stdout.write(json.dumps([s.as_dict() for s in summaries]) + "\n")
    else:
        # Rich falls back to 80 columns off a terminal (CI logs, pipes): too narrow for this table.
        stdout_console().print(summary_table(summaries, table))
    failed = [s for s in summaries if s.status != "SUCCEEDED"]
    if failed:
        err.print(f"icelake: run {failed[0].run} {failed[0].status}: {failed[0].error}", highlight=False)
        raise typer.Exit(1)


@ingest_app.command("requeue")
def ingest_requeue(
    source: Annotated[str, typer.Argument(help="The source of the quarantined batch.")],
    run_id: Annotated[str, typer.Argument(help="Its run id (the directory name under quarantine/).")],
    root: Annotated[
        str, typer.Option(help="The raw landing root: s3://icelake-raw-<account> or a local directory.")
    ],
) -> None:
    """Re-land a quarantined batch as pending after its cause was fixed; the next run merges it in
    fetch order. Refused (exit 1, with the reason) when a later batch of its endpoint was merged
    since: SCD2 history is never rewritten, re-fetch its keys instead (reason.json lists them)."""
    from icelake.aws.fileio import io_for
    from icelake.errors import IngestError
    from icelake.ingest.landing import requeue

    try:
        batch = requeue(io_for(root), root, source, run_id)
    except IngestError as exc:
        err.print(f"icelake: error: {exc}", highlight=False)
        raise typer.Exit(1) from exc
    sys.stdout.write(json.dumps({"requeued": batch.uri, "batch_id": batch.manifest.batch_id}) + "\n")
