"""Benchmark: `icelake assess --request` over an estate of many tiny tables on embedded AWS, and
the pages of an estate in headless Chromium (issue 48).

    .venv/bin/python -m benchmarks.assess_bench                    # 300 tables, concurrency 1 and default
    .venv/bin/python -m benchmarks.assess_bench --tables 20 --no-record
    .venv/bin/python -m benchmarks.assess_bench --tables 1000 --views 2000 --concurrency 0   # issue 57

The moto server runs in this process; `icelake assess` runs as its own process, as a person runs
it against AWS, once per concurrency. Each run's seconds per table are its wall time (the
command's start, imports included, to its exit) and the assessing alone (from its progress line)
over the tables. The runs' assessment.json files must be equal but for `generated_at`. Then
assessment.html is rendered from the real assessment's tables repeated under new names to 1,000
and 5,000 tables, and each page's size and its time to the load event in headless Chromium at
1280 px are recorded, with where the table of tables begins. Results go to
benchmarks/results/assess_<date>.json and a row in benchmarks/RESULTS.md ("Assessing an estate").
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.results_md import record_row, run_facts

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RESULTS_MD = BENCH_DIR / "RESULTS.md"


def _seed(lake: Any, count: int) -> float:
    """`count` tiny tables in database `bulk` (one pyiceberg table, two commits, published under
    each name); returns the seconds it took."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    t0 = time.monotonic()
    root = lake.local_root / "seed"
    root.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("seed", uri=f"sqlite:///{root}/c.db", warehouse=f"file://{root}")
    catalog.create_namespace_if_not_exists("bulk")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = catalog.create_table("bulk.seed", schema=schema)
    for i in (1, 2):
        table.append(pa.table({"id": pa.array([i], pa.int64()), "v": [f"v{i}"]}, schema=schema))
    local = catalog.load_table("bulk.seed").metadata_location
    for i in range(count):
        lake.publish("bulk", f"t{i:04d}", local, direct=True)
    return time.monotonic() - t0


def _seed_views(lake: Any, tables: int, views: int) -> float:
    """`views` views in `bulk` beside the tables: even ones Athena views joining two tables, odd
    ones Spark views on the view before them (a view on a view); returns the seconds it took."""
    from icelake.objects import envelope

    t0 = time.monotonic()
    glue = lake.source.client("glue")
    for i in range(views):
        if i % 2 == 0:
            a, b = f"t{i % tables:04d}", f"t{(i + 1) % tables:04d}"
            sql = f"SELECT x.id, y.v FROM bulk.{a} x JOIN {b} y ON x.id = y.id WHERE y.v <> 'bulk.{a}'"
            body = {"originalSql": sql, "catalog": "awsdatacatalog", "schema": "bulk", "runAsInvoker": False}
            body["columns"] = [{"name": "id", "type": "bigint"}, {"name": "v", "type": "varchar"}]
            entry: dict[str, Any] = {"ViewOriginalText": envelope.encode(body)}
            entry["ViewExpandedText"] = "/* Presto View */"
            entry["Parameters"] = {"presto_view": "true"}
        else:
            sql = f"SELECT id FROM bulk.v{i - 1:04d} WHERE id > 1"
            entry = {"ViewOriginalText": sql, "ViewExpandedText": sql}
        glue.create_table(
            DatabaseName="bulk", TableInput={"Name": f"v{i:04d}", "TableType": "VIRTUAL_VIEW", **entry}
        )
    return time.monotonic() - t0


def _assess(request: Path, out: Path, concurrency: int | None) -> dict[str, Any]:
    args = [str(REPO / ".venv" / "bin" / "icelake"), "assess", "--request", str(request), "--out", str(out)]
    if concurrency:
        args += ["--concurrency", str(concurrency)]
    t0 = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    last = [line for line in done.stderr.splitlines() if line.startswith("[icelake] assessed")][-1]
    match = re.search(r"assessed (\d+)/\d+ table\(s\) in ([\d.]+) s", last)
    assert match, last
    tables, assessing = int(match.group(1)), float(match.group(2))
    return {
        "concurrency": concurrency or "default",
        "tables": tables,
        "wall_s": round(wall, 2),
        "assessing_s": assessing,
        "wall_s_per_table": round(wall / tables, 3),
        "assessing_s_per_table": round(assessing / tables, 3),
        "progress_lines": done.stderr.count("[icelake] assessed"),
    }


def open_page(page: Path) -> dict[str, Any]:
    """A page file's size, its time to the load event in headless Chromium at 1280 px, and where
    its table of tables begins (px from the top)."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(REPO))
    from tests.browser import chromium

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.goto(page.resolve().as_uri(), wait_until="load")
            seconds = tab.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd / 1000")
            top = tab.evaluate("document.getElementById('tables').getBoundingClientRect().top + scrollY")
        finally:
            browser.close()
    return {"bytes": page.stat().st_size, "load_s": round(float(seconds), 3), "table_top_px": round(top)}


def _pages(assessment: dict[str, Any], work: Path) -> dict[str, Any]:
    from icelake.assess.pages.render import render_assessment

    measured = {}
    for count in (len(assessment["tables"]), 1000, 5000):
        data = copy.deepcopy(assessment)
        base = assessment["tables"]
        data["tables"] = [{**base[i % len(base)], "table": f"bulk.p{i:05d}"} for i in range(count)]
        data.pop("warnings_by_kind", None), data.pop("blockers_by_kind", None)  # made from the tables
        page = work / f"assessment-{count}.html"
        t0 = time.monotonic()
        page.write_text(render_assessment(data))
        measured[str(count)] = {"render_s": round(time.monotonic() - t0, 3), **open_page(page)}
    return measured


def _outcomes(assessment: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """`count` outcomes as a run of the assessed tables would report them (each migrated as
    estimated, a little slower table by table; every 50th rolled back with an error), checked by
    the outcome's own model."""
    from icelake.workflow.failures import TableError
    from icelake.workflow.models import TableOutcome

    base = [t for t in assessment["tables"] if t.get("estimate")]
    outcomes = []
    for i in range(count):
        t = base[i % len(base)]
        estimate = t["estimate"]
        failed = i % 50 == 7
        outcome = TableOutcome(
            run_id="bench",
            table=f"bulk.p{i:05d}",
            status="rolled_back" if failed else "migrated",
            files_copied=t["files_to_copy"],
            files_verified=t["files_to_copy"],
            bytes_copied=t["bytes_to_copy"],
            snapshots_validated=t["snapshots"],
            error=TableError(
                type="AccessDenied", message="the target role may not write", step="CopyInLambda"
            )
            if failed
            else None,
            seconds=estimate["duration_s"] * (1 + i / count),
            requests=estimate["requests"],
            duration_s=estimate["duration_by_phase"],
            cost_usd=estimate["cost_usd"],
            estimate=estimate,
        )
        outcomes.append(outcome.model_dump(mode="json"))
    return outcomes


def _report_pages(assessment: dict[str, Any], work: Path) -> dict[str, Any]:
    from icelake.assess.pages.render import render_report

    measured = {}
    for count in (len(assessment["tables"]), 1000, 5000):
        report = {"run_id": "bench", "status": "partial", "tables": _outcomes(assessment, count)}
        page = work / f"report-{count}.html"
        t0 = time.monotonic()
        page.write_text(render_report(report))
        measured[str(count)] = {"render_s": round(time.monotonic() - t0, 3), **open_page(page)}
    return measured


def run(tables: int, concurrencies: list[int | None], views: int = 0) -> dict[str, Any]:
    from icelake.local.embedded import start_embedded_aws
    from icelake.local.lake import build_lake

    with start_embedded_aws(REPO):
        work = Path(tempfile.mkdtemp(prefix="icelake-assess-bench-"))
        lake = build_lake(work / "local")
        seed_s = _seed(lake, tables) + _seed_views(lake, tables, views)
        body = lake.request("unused", selection={"databases": ["bulk"]})
        body.pop("run_id")
        request = work / "request.json"
        request.write_text(json.dumps(body))
        runs, outputs = [], []
        for concurrency in concurrencies:
            out = work / f"out-{concurrency or 'default'}"
            runs.append(_assess(request, out, concurrency))
            outputs.append(json.loads((out / "assessment.json").read_text()))
        for data in outputs:
            data.pop("generated_at")
        identical = all(o == outputs[0] for o in outputs)
        pages = _pages(outputs[0], work)
        report_pages = _report_pages(outputs[0], work)
    return {
        **run_facts(),
        "tables": tables,
        "views": views,
        "seed_s": round(seed_s, 1),
        "runs": runs,
        "identical": identical,
        "pages": pages,
        "report_pages": report_pages,
    }


def _record(result: dict[str, Any]) -> None:
    (BENCH_DIR / "results").mkdir(exist_ok=True)
    (BENCH_DIR / "results" / f"assess_{result['date']}_{result['commit']}.json").write_text(
        json.dumps(result, indent=1) + "\n"
    )
    runs = "; ".join(
        f"{r['concurrency']}: {r['wall_s_per_table']} ({r['assessing_s_per_table']})" for r in result["runs"]
    )
    pages = "; ".join(
        f"{n}: {p['bytes'] / 1e6:.2f} MB, {p['load_s']} s, table at {p['table_top_px']} px"
        for n, p in result["pages"].items()
    )
    if result.get("report_pages"):
        pages += " / report.html " + "; ".join(
            f"{n}: {p['bytes'] / 1e6:.2f} MB, {p['load_s']} s, table at {p['table_top_px']} px"
            for n, p in result["report_pages"].items()
        )
    views = f" + {result['views']:,} views" if result.get("views") else ""
    row = (
        f"| {result['date']} | {result['commit']} | {result['nproc']} | {result['load_average']:.1f} | "
        f"{result['tables']}{views} | {runs} | {'yes' if result['identical'] else 'NO'} | {pages} |\n"
    )
    record_row(
        RESULTS_MD,
        "## Assessing an estate",
        "`python -m benchmarks.assess_bench`: tiny tables (two commits, one data file each) in one "
        "database on embedded AWS; `icelake assess --request` as its own process against the moto "
        "server of the bench's process. Seconds per table: the command's wall time (imports included) "
        "over the tables, and in brackets the assessing alone (its last progress line). Pages: "
        "assessment.html rendered from the real assessment's tables repeated to 1,000 and 5,000, its "
        "size, its time to the load event in headless Chromium at 1280 px and where the table of "
        "tables begins.\n\n"
        "| date | commit | nproc | load avg | tables | s per table by concurrency | same output | "
        "pages |\n|---|---|---|---|---|---|---|---|\n",
        row.rstrip("\n"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=300, help="tiny tables (default 300)")
    parser.add_argument("--concurrency", type=int, action="append", help="repeatable; default: 1 and default")
    parser.add_argument("--views", type=int, default=0, help="views beside the tables (default 0)")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--pages", type=Path, help="only the pages, from this assessment.json")
    args = parser.parse_args()
    if args.pages:
        assessment = json.loads(args.pages.read_text())
        work = Path(tempfile.mkdtemp(prefix="icelake-pages-"))
        print(
            json.dumps({"pages": _pages(assessment, work), "report_pages": _report_pages(assessment, work)})
        )
        return
    concurrencies = [c or None for c in args.concurrency] if args.concurrency else [1, None]
    result = run(args.tables, concurrencies, args.views)
    print(json.dumps(result, indent=1))
    if not args.no_record:
        _record(result)


if __name__ == "__main__":
    main()
