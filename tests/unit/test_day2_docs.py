"""Issue 46's features as the docs show them: the verify request of README and of the runbook's
Day 2 section are requests the model takes, in mode verify; every bucket finding the assessment
makes is described in docs/assessment.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

from icelake.assess.pages.kinds import KINDS
from icelake.request.models import MigrationRequest

REPO = Path(__file__).resolve().parents[2]


def _verify_examples(text: str) -> list[dict[str, object]]:
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S)]
    return [b for b in blocks if isinstance(b, dict) and b.get("mode") == "verify"]


def test_the_verify_examples_of_readme_and_runbook_are_valid_verify_requests() -> None:
    readme = (REPO / "README.md").read_text()
    day2 = (REPO / "docs" / "runbook.md").read_text().split("## Day 2", 1)[1].split("\n## ", 1)[0]
    for text in (readme, day2):
        (example,) = _verify_examples(text)
        request = MigrationRequest.model_validate({"run_id": "r", **example})
        assert request.mode == "verify" and request.options.validation == "sample"
    assert "icelake migrate verify --request" in day2 and "`damaged`" in day2


def test_every_bucket_finding_is_described_in_the_assessment_docs() -> None:
    source = (REPO / "icelake" / "assess" / "gather" / "buckets.py").read_text()
    kinds = set(re.findall(r'kind="([a-z_]+)"', source))
    assert len(kinds) == 8, kinds
    docs = (REPO / "docs" / "assessment.md").read_text()
    assert {k for k in kinds if f"| `{k}` |" not in docs} == set()
    assert kinds <= set(KINDS)  # and said in general terms in warnings_by_kind and blockers_by_kind
