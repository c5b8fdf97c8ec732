"""Benchmark: the assessment's consumer scan (issue 58) at estate size on embedded AWS.

    .venv/bin/python -m benchmarks.consumer_bench                 # 1,000 tables, 500 jobs, 2,000 queries
    .venv/bin/python -m benchmarks.consumer_bench --tables 50 --jobs 20 --queries 80 --no-record

Seeds `--tables` tiny tables in database `bulk` (benchmarks/assess_bench.py's seed), then the
source account's consumers: `--jobs` Glue jobs, each with a ~2 KB script in S3 naming one table
(a quarter of them a selected one) and a table's S3 path in an argument for half; `--queries`
Athena named queries in two workgroups (a quarter naming selected tables) and a prepared statement
per 20; a state machine and a Lambda function per 20 jobs; a DAG file per 10 jobs under a code
prefix. The scan then runs as `icelake assess --request` runs it (`consumers.scan.scan_request`:
the selection, then every reader) in this process, against the moto server of this process, and
its seconds over the tables are recorded against the issue's budget of 0.2 s a table. Results go
to benchmarks/results/consumers_<date>_<commit>.json and a row in benchmarks/RESULTS.md
("Consumer scan")."""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.assess_bench import REPO, RESULTS_MD, _seed
from benchmarks.results_md import record_row, run_facts

BENCH_DIR = Path(__file__).resolve().parent
BUDGET_S_PER_TABLE = 0.2  # issue 58's "Done when"
BUCKET = "source-lake"
_FILLER = "\n".join(f"    step_{i} = transform(step_{i - 1}, options={{'n': {i}}})" for i in range(1, 40))


def _script(table: str) -> str:
    return (
        "import sys\nfrom awsglue.utils import getResolvedOptions\n\n"
        f"def main():\n    step_0 = spark.table('{table}')\n{_FILLER}\n    write(step_39)\n"
    )


def _consumers(lake: Any, tables: int, jobs: int, queries: int) -> float:
    """The source account's consumers (see the module's doc); returns the seconds it took."""
    t0 = time.monotonic()
    s3, glue, athena = (lake.source.client(s) for s in ("s3", "glue", "athena"))
    role = "arn:aws:iam::111111111111:role/etl"
    lake.source.client("iam").create_role(RoleName="etl", AssumeRolePolicyDocument="{}")

    def selected(i: int) -> str:  # a quarter name a selected table, the rest another database's
        return f"bulk.t{i % tables:04d}" if i % 4 == 0 else f"other.t{i:04d}"

    def job(i: int) -> None:
        key = f"scripts/job_{i:04d}.py"
        s3.put_object(Bucket=BUCKET, Key=key, Body=_script(selected(i)).encode())
        arguments = {"--mode": "append", "--day": "2026-12-01"}
        if i % 2 == 0:
            arguments["--input"] = f"s3://{BUCKET}/lake/bulk/t{i % tables:04d}"
        glue.create_job(
            Name=f"job-{i:04d}",
            Role=role,
            Command={"Name": "glueetl", "ScriptLocation": f"s3://{BUCKET}/{key}"},
            DefaultArguments=arguments,
        )

    athena.create_work_group(Name="analysts", Configuration={})

    def query(i: int) -> None:
        athena.create_named_query(
            Name=f"q-{i:04d}",
            Database="bulk",
            WorkGroup="analysts" if i % 2 else "primary",
            QueryString=f"SELECT day, count(*)\nFROM {selected(i)}\nWHERE day > current_date - 7\nGROUP BY 1",
        )
        if i % 20 == 0:
            athena.create_prepared_statement(
                StatementName=f"s_{i:04d}",
                WorkGroup="analysts",
                QueryStatement=f"SELECT * FROM {selected(i)}",
            )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(job, range(jobs)))
        list(pool.map(query, range(queries)))
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("handler.py", "def handler(event, context):\n    return 1\n")
    for i in range(0, jobs, 20):
        state = {"Type": "Task", "Resource": "arn:aws:states:::athena:startQueryExecution.sync", "End": True}
        state["Parameters"] = {"QueryString": f"SELECT count(*) FROM {selected(i)}"}
        lake.source.client("stepfunctions").create_state_machine(
            name=f"flow-{i:04d}",
            definition=json.dumps({"StartAt": "Q", "States": {"Q": state}}),
            roleArn=role,
        )
        lake.source.client("lambda").create_function(
            FunctionName=f"fn-{i:04d}",
            Runtime="python3.12",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": code.getvalue()},
            Environment={"Variables": {"INPUT": f"s3://{BUCKET}/lake/bulk/t{i % tables:04d}/"}},
        )
    for i in range(0, jobs, 10):
        s3.put_object(Bucket=BUCKET, Key=f"dags/dag_{i:04d}.py", Body=_script(selected(i)).encode())
    return time.monotonic() - t0


def run(tables: int, jobs: int, queries: int) -> dict[str, Any]:
    from icelake.assess.consumers.scan import scan_request
    from icelake.local.embedded import start_embedded_aws
    from icelake.local.lake import build_lake
    from icelake.request.selection import parse_request

    with start_embedded_aws(REPO):
        work = Path(tempfile.mkdtemp(prefix="icelake-consumer-bench-"))
        lake = build_lake(work / "local")
        seed_s = _seed(lake, tables)
        consumers_s = _consumers(lake, tables, jobs, queries)
        body = lake.request("consumer-bench", selection={"databases": ["bulk"]})
        body["consumers"] = {"code_prefixes": [f"s3://{BUCKET}/dags/"]}
        request = parse_request(body)
        t0 = time.monotonic()
        rewire = scan_request(request, lake.deps)
        scan_s = time.monotonic() - t0
    return {
        **run_facts(),
        "tables": tables,
        "jobs": jobs,
        "named_queries": queries,
        "seed_s": round(seed_s, 1),
        "consumers_s": round(consumers_s, 1),
        "scan_s": round(scan_s, 2),
        "scan_s_per_table": round(scan_s / tables, 4),
        "within_budget": scan_s / tables <= BUDGET_S_PER_TABLE,
        "references": len(rewire.references),
        "unread": len(rewire.unread),
        "by_kind": {k: v.model_dump() for k, v in rewire.by_kind.items()},
    }


def _record(result: dict[str, Any]) -> None:
    (BENCH_DIR / "results").mkdir(exist_ok=True)
    name = f"consumers_{result['date']}_{result['commit']}.json"
    (BENCH_DIR / "results" / name).write_text(json.dumps(result, indent=1) + "\n")
    read = result["by_kind"]
    row = (
        f"| {result['date']} | {result['commit']} | {result['nproc']} | {result['load_average']} | "
        f"{result['tables']:,} | {result['jobs']:,} | {result['named_queries']:,} | "
        f"{sum(k['read'] for k in read.values()):,} | {result['references']:,} | {result['unread']} | "
        f"{result['scan_s']} | {result['scan_s_per_table']} | {'yes' if result['within_budget'] else 'NO'} |"
    )
    record_row(
        RESULTS_MD,
        "## Consumer scan",
        "`python -m benchmarks.consumer_bench`, `make bench-assess`: the assessment's consumer scan "
        "(issue 58) on embedded AWS, in the bench's process against its moto server: the selection, "
        "then Glue jobs (a ~2 KB script each in S3), crawlers, Athena named queries (two workgroups) "
        "and prepared statements, state machines, Lambda functions and DAG files, on 8 threads. "
        "Budget: 0.2 s a table.\n\n"
        "| date | commit | nproc | load avg | tables | jobs | named queries | consumers read | "
        "references | unread | scan s | s per table | within budget |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        row,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    result = run(args.tables, args.jobs, args.queries)
    print(json.dumps(result, indent=1))
    if not args.no_record:
        _record(result)
    if not result["within_budget"]:
        raise SystemExit(f"the scan took {result['scan_s_per_table']} s a table, over {BUDGET_S_PER_TABLE}")


if __name__ == "__main__":
    main()
