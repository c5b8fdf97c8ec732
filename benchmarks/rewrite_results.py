"""The rewrite bench's report (benchmarks/rewrite_bench.py): its summary on the console, its row
in benchmarks/RESULTS.md and its JSON in benchmarks/results/."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
MiB = 1024 * 1024


def mib(n: int | float) -> str:
    return f"{n / MiB:.0f} MiB"


def summary_rows(res: dict[str, Any]) -> list[tuple[str, str]]:
    ice, lake, table = res["iceberg"], res["icelake"], res["table"]
    sizes = res["parameters"]["memory_sizes_snapshots"]
    full = lake["sizes"][str(sizes[-1])]
    rows = [
        (
            "table",
            f"{table['snapshots']} snapshots, {table['data_files']:,} data files, "
            f"{table['manifests']} manifests, {table['metadata_json_files']} metadata.json",
        ),
        ("build (py4j, no data written)", f"{table['build_seconds']} s"),
        (
            "iceberg rewrite_table_path",
            f"{ice['best_seconds']} s wall (runs: {[r['seconds'] for r in ice['runs']]}), "
            f"CPU {[r['cpu_seconds'] for r in ice['runs']]} s",
        ),
        (
            "icelake metadata rewrite",
            f"{lake['best_rewrite_seconds']} s wall (runs: {[r['seconds'] for r in full['rewrite_runs']]}), "
            f"process CPU {[r['cpu_seconds'] for r in full['rewrite_runs']]} s",
        ),
        (
            "ratio iceberg / icelake",
            f"{res['ratio_iceberg_over_icelake']} best vs best; "
            f"{res['ratio_iceberg_first_over_icelake']} with Iceberg's first (cold JVM) run",
        ),
        (
            "other processes, max during a timed run",
            f"{res['max_other_cpu_seconds']} CPU s (on {res['machine']['nproc']} cores)",
        ),
        ("python baseline RSS (imports)", mib(lake["baseline_maxrss_bytes"])),
    ]
    for n in sizes:
        e = lake["sizes"][str(n)]
        r = min(e["rewrite_runs"], key=lambda x: x["seconds"])
        rows += [
            (
                f"icelake rewrite @ {e['data_files']:,} files",
                f"{r['seconds']} s, peak RSS {mib(r['maxrss_bytes'])}, "
                f"tracemalloc peak {mib(e['rewrite_tracemalloc_peak_bytes'])}",
            ),
            (
                f"icelake build_plan @ {e['data_files']:,} files",
                f"{e['plan']['seconds']} s, peak RSS {mib(e['plan']['maxrss_bytes'])}, "
                f"tracemalloc peak {mib(e['plan_tracemalloc_peak_bytes'])}",
            ),
        ]
    for name, v in (("icelake", lake["verification"]), ("iceberg", ice["verification"])):
        rows.append(
            (
                f"verify {name}",
                ("ok" if v["ok"] else "PROBLEMS: " + "; ".join(v["problems"]))
                + f" ({v['snapshots']} snapshots, {v['current_data_files']:,} data files, "
                f"{v['wrong_manifest_lengths']} wrong manifest_length)",
            )
        )
    return rows


def print_summary(res: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="rewrite_table_path vs icelake (metadata only)")
    t.add_column("measure")
    t.add_column("value")
    for k, v in summary_rows(res):
        t.add_row(k, v)
    m = res["machine"]
    t.caption = (
        f"{m['nproc']} cores ({m['cpu']}), Python {m['python']}, Java {m['java']}, "
        f"Spark {m['spark']}, Iceberg {m['iceberg']}"
    )
    Console(width=None if sys.stdout.isatty() else 140).print(t)


RESULTS_HEADER = """# Benchmark results

`make bench` (`python -m benchmarks.rewrite_bench`): a synthetic Iceberg v2 table (Hadoop catalog,
local disk; only metadata is written) rewritten for a new location by Iceberg's
`rewrite_table_path` procedure (Spark local[2]) and by icelake's metadata rewrite (one Python
process, one thread). Both rewrite every metadata.json, manifest list and manifest into a staging
directory and list the data files to copy. Peak memory is that of the icelake process alone
(ru_maxrss; tracemalloc peak = Python allocations), at half and at full table size. The JSON
files in `results/` hold every figure.

"""


RESULTS_COLUMNS = [
    "date",
    "commit",
    "nproc",
    "Python",
    "Spark",
    "Iceberg",
    "snapshots",
    "data files",
    "iceberg s best (first run)",
    "icelake s best",
    "iceberg/icelake best (first run)",
    "icelake rewrite peak RSS (half -> full)",
    "rewrite tracemalloc peak (half -> full)",
    "icelake build_plan s (full)",
    "build_plan peak RSS (half -> full)",
    "other processes' CPU s (max per timed run)",
    "verified",
]


def results_header() -> str:
    head = "| " + " | ".join(RESULTS_COLUMNS) + " |\n"
    return RESULTS_HEADER + head + "|" + "---|" * len(RESULTS_COLUMNS) + "\n"


def results_row(res: dict[str, Any]) -> str:
    m, p, lake = res["machine"], res["parameters"], res["icelake"]
    half, full = (
        lake["sizes"][str(n)] for n in (p["memory_sizes_snapshots"][0], p["memory_sizes_snapshots"][-1])
    )

    def rss(e: dict[str, Any]) -> int:
        return int(min(r["maxrss_bytes"] for r in e["rewrite_runs"]))

    verified = "ok" if lake["verification"]["ok"] else "FAILED"
    verified += f"; iceberg wrong manifest_length: {res['iceberg']['verification']['wrong_manifest_lengths']}"
    cells = [
        res["recorded_at"][:10],
        m["git_commit"],
        str(m["nproc"]),
        m["python"],
        m["spark"],
        m["iceberg"],
        str(res["table"]["snapshots"]),
        f"{res['table']['data_files']:,}",
        f"{res['iceberg']['best_seconds']} ({res['iceberg']['runs'][0]['seconds']})",
        str(lake["best_rewrite_seconds"]),
        f"{res['ratio_iceberg_over_icelake']} ({res['ratio_iceberg_first_over_icelake']})",
        f"{mib(rss(half))} -> {mib(rss(full))}",
        f"{mib(half['rewrite_tracemalloc_peak_bytes'])} -> {mib(full['rewrite_tracemalloc_peak_bytes'])}",
        str(full["plan"]["seconds"]),
        f"{mib(half['plan']['maxrss_bytes'])} -> {mib(full['plan']['maxrss_bytes'])}",
        str(res["max_other_cpu_seconds"]),
        verified,
    ]
    return "| " + " | ".join(cells) + " |\n"


def record(res: dict[str, Any], results_dir: Path) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    day = res["recorded_at"][:10]
    out = results_dir / f"rewrite_{day}.json"
    n = 2
    while out.exists():
        out = results_dir / f"rewrite_{day}_{n}.json"
        n += 1
    out.write_text(json.dumps(res, indent=2) + "\n")
    md = BENCH_DIR / "RESULTS.md"
    if not md.exists():
        md.write_text(results_header())
    with md.open("a") as fh:
        fh.write(results_row(res))
    return out
