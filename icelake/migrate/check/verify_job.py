"""The files check of a verify in the Glue job, for the tables the estimate gives it
(`assess/estimate/verify_estimate.py`): the Verify Lambda writes what to check (`VerifyJob`, beside
the run's other files of the table), the job (glue_jobs/migrate_table.py `--verify-job`) runs
`proved_files` with its chunks on Spark tasks and writes the check (`FilesProved`), and the Verify
Lambda, called again, reads it and finishes the verify or the repair at the request's tier.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from icelake.aws.fileio import FileIO
from icelake.migrate import metadata_json as mj
from icelake.migrate.check.inventory_report import read_inventory
from icelake.migrate.check.proved import Damage, ProofCheck, proved_files
from icelake.migrate.check.record import read_record
from icelake.migrate.copy.engine import Runner

VERIFY_JOB_NAME = "verify-job.json"
FILES_PROVED_NAME = "files-proved.json"


class VerifyJob(BaseModel):
    """What the Glue job checks: the target's metadata against the records of the runs that wrote
    it, and where it writes what it found."""

    model_config = ConfigDict(frozen=True)
    target_metadata: str
    records: list[str]  # the copy records' uris (artifacts bucket), oldest first
    source_prefixes: list[str]
    result_uri: str
    started_at: float  # when the Verify step started (epoch seconds): the outcome's time includes the job's
    rule: str  # why the Glue job checks it (assess/estimate/verify_estimate.py), for the outcome
    inventory_report: str | None = None  # options.inventory_report (check/inventory_report.py)


class FilesProved(BaseModel):
    """A `ProofCheck` as the job writes it, with the S3 requests the job sent."""

    model_config = ConfigDict(frozen=True)
    files: int
    heads: int
    ranges: int
    unrecorded: int
    damaged: list[tuple[str, str, str, list[int]]]  # (path, what, problem, snapshots)
    other: list[str]
    seconds: float
    note: str = ""
    requests: dict[str, int] = {}

    @classmethod
    def of(cls, check: ProofCheck, requests: dict[str, int]) -> FilesProved:
        fields = dataclasses.asdict(check)
        fields["damaged"] = [(d.path, d.what, d.problem, list(d.snapshots)) for d in check.damaged]
        return cls(**fields, requests=requests)

    def check(self) -> ProofCheck:
        fields = self.model_dump(exclude={"requests", "damaged"})
        damaged = [Damage(p, w, problem, tuple(s)) for p, w, problem, s in self.damaged]
        return ProofCheck(**fields, damaged=damaged)


def run_verify_job(
    job: VerifyJob, artifacts: FileIO, target: Callable[[], FileIO], runner: Runner
) -> ProofCheck:
    """The target's files checked against the record on `runner`'s tasks, each opening the target
    with `target`; the record read with `artifacts` (the job's own role)."""
    started = time.monotonic()
    record, _absent = read_record(artifacts, job.records)
    io = target()
    inventory = None
    if job.inventory_report:
        location = mj.parse_metadata(job.target_metadata, io.read(job.target_metadata))[0]["location"]
        inventory = read_inventory(io, job.inventory_report, location)
    check = proved_files(
        io,
        job.target_metadata,
        record,
        job.source_prefixes,
        runner=runner,
        open_io=target,
        inventory=inventory,
    )
    check.seconds = round(time.monotonic() - started, 3)
    return check
