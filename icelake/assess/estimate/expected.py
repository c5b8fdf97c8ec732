"""The S3 requests a migration's copy and Validate will send for a plan: what an assessment
estimates, and what the Plan step records for the run's own estimate (icelake/workflow/accounting.py)."""

from __future__ import annotations

from collections.abc import Mapping

from icelake.aws.request_count import added, subtracted
from icelake.migrate.check.validate import files_check_requests
from icelake.migrate.copy.engine import migration_requests
from icelake.migrate.plan.model import TablePlan
from icelake.migrate.prune import prune_requests
from icelake.uris import PrefixMap, canonical, is_under


def expected_requests(
    plan: TablePlan,
    target_location: str,
    replanned: Mapping[str, int],
    *,
    prune: bool,
    target_kms: bool = False,
    present: int = 0,
) -> dict[str, dict[str, int]]:
    """What the copy (its own plan, `replanned`: what planning sent, then its writes) and Validate
    (its file check, then the prune that follows a validated sync when `prune`) will send, when
    the copy is a Lambda's; `file_check`: the check's share (`by_engine` places it). `present`:
    the rewritten files the target already holds (a re-run's), asked and not written."""
    check = _validate_requests(plan, target_location)
    validate = check
    if prune:
        validate = added(check, prune_requests(len(plan.manifest_lists), len(plan.manifests)))
    copy = migration_requests(plan, target_kms=target_kms, present=present)
    return {"copy": added(replanned, copy), "validate": validate, "file_check": check}


def by_engine(
    expected: Mapping[str, Mapping[str, int]], engine: str
) -> tuple[dict[str, int], dict[str, int]]:
    """The copy's and Validate's requests as `engine` sends them: the Glue job checks the target's
    files next to its copy (glue_jobs/migrate_table.py `files_check`) and Validate reads what it
    found, so the check's requests are the copy's; a Lambda copy leaves the check to Validate.
    Left out, for the Glue job: its journal checks each rewritten file again (a HEAD each), and
    each of its processes asks each bucket's region once (a GET): a few hundred requests on a
    table of a hundred thousand files and its copies' two hundred thousand."""
    copy, validate = dict(expected.get("copy", {})), dict(expected.get("validate", {}))
    check = expected.get("file_check")
    if engine != "glue" or not check:
        return copy, validate
    return added(copy, check), subtracted(validate, check)


def _validate_requests(plan: TablePlan, target_location: str) -> dict[str, int]:
    """Validate's file check of the target (its requests; pyiceberg's reads are not counted)."""
    at_location = sum(
        n for source, n in plan.prefix_counts.items() if _maps_into(plan.prefix_map, source, target_location)
    )
    files = plan.files_planned
    return files_check_requests(
        objects_at_location=max(at_location, files),
        lists=len(plan.manifest_lists),
        manifests=len(plan.manifests),
        elsewhere=max(0, files - max(at_location, files)),
    )


def _maps_into(prefix_map: PrefixMap, source: str, target_location: str) -> bool:
    mapping = prefix_map.match_canonical(source)
    return mapping is not None and is_under(canonical(mapping.target), canonical(target_location))
