"""Assess (mode "assess"): one table's assessment, by the code `icelake assess --request` runs
(`icelake.assess.gather.estate.assess_item`), kept in the artifacts bucket for the Report step, which
writes the run's assessment.json and assessment.html. Nothing is written to any target."""

from __future__ import annotations

from icelake.assess.consumers.scan import run_rewire
from icelake.assess.estimate.prices import PriceTable, load_prices, price_table_of
from icelake.assess.gather.assessment import Settings, assemble
from icelake.assess.gather.buckets import BucketReads
from icelake.assess.gather.estate import assess_item, scope_of, settings_for
from icelake.assess.pages.render import render_assessment
from icelake.assess.schema import Finding, TableAssessment
from icelake.aws.warm import kept
from icelake.constants import DEFAULT_PRICE_REGION
from icelake.request.deps import Artifacts, Deps
from icelake.request.models import MigrationRequest, WorkItem
from icelake.workflow.inputs import PlanInput
from icelake.workflow.models import AssessResult, RunState, RunSummary

ASSESSMENT_NAME = "assessment.json"


def assess(given: PlanInput, deps: Deps) -> AssessResult:
    item = given.item
    prices = request_prices(item.request, deps)
    settings = settings_for(item.request, prices, sync_days=item.request.options.sync_days)
    # The buckets' settings are read once per run in a warm container, not once per table.
    buckets = kept(("bucket-reads", item.run_id), BucketReads)
    assessed = assess_item(item, deps, settings, buckets=buckets)
    key = Artifacts.key(item.run_id, item.name, ASSESSMENT_NAME)
    deps.artifacts.put_json(key, assessed.model_dump(mode="json"))
    deps.ledger.record_table(item.run_id, item.name, "ASSESSED", blockers=len(assessed.blockers))
    return AssessResult(
        table=item.name, blockers=len(assessed.blockers), warnings=len(assessed.warnings), assessment_key=key
    )


def request_prices(request: MigrationRequest, deps: Deps) -> PriceTable:
    """The prices an assessment of `request` uses: its options.prices (a price table in the shipped
    format, read from S3 with the workflow's role), else the shipped table of its region (which
    the request's parse has checked exists)."""
    uri = request.options.prices
    if uri is None:
        return load_prices(request.price_region)
    return price_table_of(request.price_region, deps.artifacts.io.read(uri).decode(), uri)


def table_assessment(deps: Deps, run_id: str, table: str) -> TableAssessment | None:
    """The table's assessment this run's Assess step kept, or None if it did not finish."""
    try:
        return TableAssessment.model_validate(
            deps.artifacts.read_json(Artifacts.key(run_id, table, ASSESSMENT_NAME))
        )
    except Exception:
        return None


def report_assessment(run_id: str, worklist_key: str, worklist_bucket: str | None, deps: Deps) -> RunSummary:
    """The run's assessment (mode "assess"): every table's, as its Assess step kept it, assembled
    into runs/<run_id>/assessment.json and assessment.html. A table whose Assess step did not
    finish is in it too, blocked, with why."""
    items = [WorkItem.model_validate(i) for i in deps.artifacts.read_json(worklist_key, worklist_bucket)]
    items = [item for item in items if not item.source_dropped]
    tables = []
    failed = 0
    for item in items:
        assessed = table_assessment(deps, run_id, item.name)
        if assessed is None:
            failed += 1
            assessed = TableAssessment(
                table=item.name,
                source_metadata_location=item.source_metadata_location,
                target_location=item.target_location,
                planned=False,
                blockers=[
                    Finding(
                        kind="not_assessed",
                        message="the Assess step did not finish for this table: its error is in the "
                        "execution's history (icelake migrate status RUN_ID); assess it again",
                    )
                ],
            )
        tables.append(assessed)
    request = items[0].request if items else None
    if request is not None:
        settings = settings_for(request, request_prices(request, deps), sync_days=request.options.sync_days)
        scope = scope_of(request)
    else:
        settings, scope = Settings(prices=load_prices(DEFAULT_PRICE_REGION)), {}
    assessment = assemble(tables, settings, {**scope, "run_id": run_id})
    if request is not None:  # the views and other entries, as `icelake assess --request` names them
        from icelake.assess.gather.estate import with_objects

        assessment = with_objects(assessment, request, deps, items)
    data = assessment.model_dump(mode="json")
    json_key, html_key = f"runs/{run_id}/assessment.json", f"runs/{run_id}/assessment.html"
    deps.artifacts.put_json(json_key, data)
    # What reads the tables (runs/<run_id>/rewire.json), scanned with the source role: the same scan
    # as `icelake assess --request` (icelake/assess/consumers/scan.py).
    rewire = run_rewire(request, items, deps, run_id)
    page = render_assessment(data, rewire.model_dump(mode="json") if rewire else None)
    deps.artifacts.io.write(deps.artifacts.uri(html_key), page.encode())
    status: RunState = "succeeded" if failed == 0 else ("failed" if failed == len(items) else "partial")
    return RunSummary(
        run_id=run_id,
        status=status,
        tables=len(items),
        counts={k: v for k, v in {"assessed": len(items) - failed, "failed": failed}.items() if v},
        report_uri=deps.artifacts.uri(json_key),
        report_html_uri=deps.artifacts.uri(html_key),
    )
