"""The estimate model's parallelism and its manifest entries (icelake/assess/estimate/model.py): what S3
answers at once caps every engine's concurrency, and a full copy's passes over its manifests are
timed in the phases that make them."""

from __future__ import annotations

import pytest

from icelake.assess.estimate.model import PlannedWork, copy_seconds, estimate_table, full_copy_entries
from icelake.assess.estimate.prices import load_prices
from icelake.throughput import ThroughputModel

PRICES = load_prices("us-east-1")
REQUESTS = {"head": 10_000, "copy": 10_000}  # a copy's HEAD and CopyObject for 10,000 files
SPREAD = 0.001  # the copies spread over a thousand prefixes: no prefix's rate binds


def _one_at_a_time(model: ThroughputModel) -> float:
    """The copy's requests and bytes one after another, after its start."""
    latency = sum(n * model.latency_s[kind] for kind, n in REQUESTS.items())
    return latency + 10_000 * 1024 / (model.copy_mib_per_s * 1024**2)


@pytest.mark.parametrize("glue", [False, True], ids=["lambda", "glue"])
def test_what_s3_answers_at_once_caps_each_engine_s_concurrency(glue: bool) -> None:
    # Given the default model (a Lambda copies 16 files at once, the Glue job 10 workers x 16), and
    # the same model on an endpoint that answers one request at a time (the embedded AWS)
    free = ThroughputModel()
    serial = free.model_copy(update={"endpoint_parallel": 1})
    start = free.glue_startup_s if glue else free.lambda_start_s
    parallel = free.glue_workers * free.glue_threads_per_worker if glue else free.lambda_parallel

    # When the copy of 10,000 files of 1 KiB is timed under each
    def seconds(model: ThroughputModel) -> float:
        return copy_seconds(REQUESTS, 10_000 * 1024, model, glue=glue, busiest=SPREAD, files=10_000)

    # Then the free endpoint spreads the work over the engine's concurrency, and the serial one
    # does it one request at a time, whatever the engine could send
    assert seconds(free) - start == pytest.approx(_one_at_a_time(free) / parallel)
    assert seconds(serial) - start == pytest.approx(_one_at_a_time(free))
    # ... and a cap above the engine's own concurrency changes nothing
    roomy = free.model_copy(update={"endpoint_parallel": 10_000})
    assert seconds(roomy) == pytest.approx(seconds(free))


def test_a_full_copy_times_each_pass_over_its_manifests_in_the_phase_that_makes_it() -> None:
    # Given a table whose manifests hold 100,000 entries
    entries = 100_000

    # Then a Lambda-planned Lambda copy decodes them in Plan, in the copy's own plan and rewrite,
    # and in Validate's file check and prune
    assert full_copy_entries(entries, glue=False, planned_by_glue=False, prune=True) == {
        "plan": 100_000,
        "copy": 150_000,
        "validate": 200_000,
    }
    # ... a Glue-planned Glue copy: not in Plan (it reads the metadata.json alone), the file check
    # next to the copy, the prune in Validate
    assert full_copy_entries(entries, glue=True, planned_by_glue=True, prune=True) == {
        "copy": 250_000,
        "validate": 100_000,
    }
    # ... without the prune, Validate of a Glue copy decodes none
    assert full_copy_entries(entries, glue=True, planned_by_glue=True, prune=False) == {"copy": 250_000}
    assert full_copy_entries(0, glue=False, planned_by_glue=False, prune=True) == {}

    # When the copy is estimated with and without them
    model = ThroughputModel(manifest_entry_s=2e-5)
    read = full_copy_entries(entries, glue=True, planned_by_glue=True, prune=True)

    def estimate(entries_read: dict[str, int]) -> dict[str, float]:
        work = PlannedWork(
            plan_requests={"get": 1},
            run_requests=REQUESTS,
            validate_requests={"get": 201},
            bytes_to_copy=10_000 * 1024,
            files_to_copy=10_000,
            engine="glue",
            busiest_share=SPREAD,
            entries_read=entries_read,
        )
        made = estimate_table(work, model, PRICES, cross_region=False, stored_bytes=0, sync_days=30)
        assert made.entries_by_phase == entries_read
        return made.duration_by_phase

    without, with_entries = estimate({}), estimate(read)

    # Then each phase is longer by its entries at the model's manifest_entry_s, and no other
    for phase in ("plan", "copy", "validate"):
        extra = read.get(phase, 0) * model.manifest_entry_s
        assert with_entries[phase] - without[phase] == pytest.approx(extra, abs=0.002)
