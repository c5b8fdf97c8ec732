"""The throughput model: how fast S3, Lambda and Glue do a migration's work, the parameters of
every time estimate (icelake/assess/estimate/model.py). Its defaults are S3's published request rates and
typical same-region latencies; an operator who measured their own accounts passes their figures as
a JSON file (`icelake assess --throughput FILE`, a request's `options.throughput`), each parameter
explained, with how to measure it, in docs/assessment.md. `embedded.json` beside this module is the
embedded AWS's (moto on loopback) measured by benchmarks/throughput_probe.py: the model the tests
hold runs on that AWS to. Below the request, the assessment and the workflow, which all read it.

What the model leaves out: latency varies with object size only through `copy_mib_per_s` and
`list_key_s` (a GET of a large manifest costs its latency alone; its entries cost
`manifest_entry_s` each, for every pass a phase makes over them: estimate.full_copy_entries,
sync_window.ENTRY_PASSES); a listing is taken to return full pages of the objects it settles (the
table's files), not the other objects under its prefixes; a step's catalog and ledger calls are
part of its start, the same for every table;
throttling (503 SlowDown) is modelled as the per-prefix rate bound, not as retries; the estimate's
range (low, high) comes from the latencies' spread and the start-ups' ranges only, not from byte
speed or the prefix rates."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from icelake.aws.request_count import REQUEST_KINDS
from icelake.errors import IcelakeError

SHIPPED = ("embedded",)  # models shipped beside this module, by name


class ThroughputModel(BaseModel):
    """How fast S3, Lambda and Glue do the work (defaults: S3's published request rates, typical
    same-region latencies; every parameter is written into assessment.json)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    # What the figures are: "default", a shipped model's name, or the operator's (a file's path
    # when its JSON names none): assessment.json says which model its estimates used.
    name: str = "default"
    measured: str = ""  # how and where the figures were measured (free text)
    # Seconds from request to answer of a small object, by request kind (same region).
    latency_s: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=lambda: {
            "list": 0.08,
            "head": 0.02,
            "get": 0.03,
            "put": 0.05,
            "copy": 0.06,
            "delete": 0.03,
        }
    )
    # Seconds each key a listing returns adds to its request: S3 sends, and the client parses, up to
    # 1,000 keys a page, so a full page costs well over an empty one (measured by
    # benchmarks/throughput_probe.py as a 1,000-key page against a one-key page; on embedded AWS a
    # full page takes about ten times a small one). The default is not measured: about 0.2 s a page.
    list_key_s: float = Field(default=0.0002, ge=0)
    # Of list_key_s, the client's CPU on each key (parsing the page; the probe measures its thread's
    # CPU over a full page less a one-key page). A process that lists many ranges at once spends it
    # on its own cores while the endpoint answers the others' pages: a Lambda's one core parses
    # every key. None: not measured, the whole of list_key_s taken as the client's.
    list_key_client_s: float | None = Field(default=None, ge=0)
    copy_mib_per_s: float = Field(default=100.0, gt=0)  # one server-side copy's speed past its latency
    # Bytes a second a copy streamed through the engine moves (each byte read in by a GET and sent
    # out by a PUT): a target that takes no server-side copy, S3 Tables' storage
    # (icelake/migrate/copy/streamed.py). The engine's own bandwidth bounds it, whatever its
    # threads: one Copy Lambda's (3,008 MB), and one Glue worker's (the job moves workers times it).
    # Each is the lower of two bounds. The CPU, measured: benchmarks/stream_copy_bench.py found one
    # thread spending 4.8 ms of CPU per MiB streamed (the GETs, botocore's CRC32 of each part, the
    # copy's CRC64NVME, CRC32 and MD5s, the UploadParts; 256 MiB in 32 MiB parts, 2026-12-07), about
    # 200 MiB/s a core: 1.7 vCPU (a 3,008 MB Lambda) or 4 (a G.1X worker) are not the bound. The
    # network, not measured here, is: AWS publishes no Lambda bandwidth (S3 throughput from one
    # function is commonly reported at 50-100 MB/s), nor a Glue worker's (a 4-vCPU EC2 instance has
    # about 1.25 Gbit/s of baseline bandwidth, ~150 MiB/s each way). The defaults take 80 and 120
    # MiB/s; an operator who measured their own passes them (`options.throughput`).
    lambda_stream_mib_per_s: float = Field(default=80.0, gt=0)
    glue_worker_stream_mib_per_s: float = Field(default=120.0, gt=0)
    # Seconds a step spends on each manifest entry it reads (decoded, its path taken, classified),
    # on one core: what a sync pays for the entries its commits wrote
    # (icelake/assess/estimate/sync_window.py).
    # Measured by benchmarks/throughput_probe.py --manifest on a manifest of the table's own writer
    # (wide column statistics make an entry dearer). The default: 17 us on one core of a 2-core
    # x86 machine (2026-11-29, a 100,000-entry manifest of Iceberg's Java writer, 10 columns'
    # statistics), over the 0.58 vCPU a 1,024 MB Lambda gets (AWS gives one vCPU at 1,769 MB).
    manifest_entry_s: float = Field(default=3e-5, ge=0)
    plan_parallel: int = Field(default=4, ge=1)  # metadata files the plan fetches ahead
    lambda_parallel: int = Field(default=16, ge=1)  # copies and rewrites a Copy Lambda runs at once
    glue_workers: int = Field(default=10, ge=2)  # the deployed job's (cdk context glue_workers)
    glue_worker_type: str = "G.1X"
    glue_threads_per_worker: int = Field(default=16, ge=1)  # copies in flight per worker
    # The most requests S3 answers at once for a run, whatever its steps send (None: no bound but
    # the prefix rates, as AWS's S3). Every phase's parallelism is capped by it. The embedded AWS
    # answers every request from one Python process: benchmarks/estimate_pairs.py measures 1 here,
    # so its Glue job's two executors copy one file at a time, as a Lambda's 16 threads do.
    endpoint_parallel: int | None = Field(default=None, ge=1)
    glue_startup_s: float = Field(default=60.0, ge=0)  # a job run's start (Glue 4/5: under a minute)
    # A step's start and the work it does whatever the table: its invocation, the two accounts'
    # sessions and clients, its catalog and ledger calls (benchmarks.estimate_pairs.plan_step_start
    # measures it on embedded AWS as a warm Plan step of a small table, less its S3 requests).
    lambda_start_s: float = Field(default=1.0, ge=0)
    # S3's request rates per prefix: 3,500 PUT/COPY/POST/DELETE and 5,500 GET/HEAD per second.
    prefix_write_per_s: float = Field(default=3500.0, gt=0)
    prefix_read_per_s: float = Field(default=5500.0, gt=0)
    map_overhead_s: float = Field(default=2.0, ge=0)  # Inventory and Report, once per run
    # The estimate's range (low, high): every latency times these factors (a kind's p10 and p90 over
    # its median), and a step's start at either end of its range.
    latency_spread: tuple[float, float] = (0.7, 2.0)
    lambda_start_range_s: tuple[float, float] = (0.1, 3.0)  # warm invocation .. cold start
    glue_startup_range_s: tuple[float, float] = (30.0, 120.0)  # Glue 4/5: a warm pool .. a cold cluster

    @field_validator("latency_spread", "lambda_start_range_s", "glue_startup_range_s")
    @classmethod
    def _range(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not 0 <= v[0] <= v[1]:
            raise ValueError(f"a range is [low, high] with 0 <= low <= high, got {list(v)}")
        return v

    def list_key_client(self) -> float:
        """Seconds of the client's CPU a listed key costs."""
        return self.list_key_s if self.list_key_client_s is None else self.list_key_client_s

    def list_key(self) -> float:
        """Seconds a listed key adds to its page: list_key_s, and at least the client's parse of it
        (the probe's CPU figure is a mean, steadier than its difference of two medians of wall time)."""
        return max(self.list_key_s, self.list_key_client())

    def bounds(self) -> tuple[ThroughputModel, ThroughputModel]:
        """The model at the low end of its ranges, and at the high end."""
        return self._at(0), self._at(1)

    def _at(self, end: int) -> ThroughputModel:
        # The range always holds the model's own figures: a start set outside its range widens it.
        pick = min if end == 0 else max
        factor = pick(self.latency_spread[end], 1.0)
        return self.model_copy(
            update={
                "latency_s": {k: v * factor for k, v in self.latency_s.items()},
                "list_key_s": self.list_key_s * factor,
                "lambda_start_s": pick(self.lambda_start_range_s[end], self.lambda_start_s),
                "glue_startup_s": pick(self.glue_startup_range_s[end], self.glue_startup_s),
            }
        )

    @field_validator("latency_s")
    @classmethod
    def _kinds(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(v) - set(REQUEST_KINDS))
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not a request kind: {', '.join(REQUEST_KINDS)}")
        return v


def load_throughput(path: Path) -> ThroughputModel:
    """The model in the JSON file at `path` (parameters left out keep their defaults); a bad file
    is refused in one line naming the field."""
    try:
        body = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise IcelakeError(f"{path} is not a readable JSON throughput model ({exc}): fix the file") from exc
    if isinstance(body, dict) and "name" not in body:
        body = {**body, "name": str(path)}
    return throughput_of(body, str(path))


def shipped_throughput(name: str) -> ThroughputModel:
    """A model shipped beside this module (SHIPPED), e.g. "embedded"."""
    text = resources.files(__package__).joinpath(f"{name}.json").read_text()
    return throughput_of(json.loads(text), name)


def throughput_of(body: Any, where: str) -> ThroughputModel:
    """`body` (a JSON value) as a model, or a one-line refusal naming the first bad field."""
    try:
        return ThroughputModel.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(the whole file)"
        raise IcelakeError(
            f"{where} is not a throughput model: {field}: {first['msg']} ({exc.error_count()} problem(s)); "
            "docs/assessment.md lists the parameters"
        ) from exc
