"""README's "Options" table is generated from the request's model (tools/options_table.py): a
field added, removed, retyped, re-defaulted or re-described in icelake/request/models.py without
regenerating the table fails here. And README's prefix_maps example is a request the model takes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from icelake.request.models import MigrationRequest, Options
from tools import options_table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_options_table_is_the_models() -> None:
    text = README.read_text()
    assert options_table.rewritten(text) == text, "run `python -m tools.options_table`"
    block = text.split(options_table.START, 1)[1].split(options_table.END, 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == list(Options.model_fields)
    # every row says what its option does
    assert all(row.rstrip(" |").split(" | ")[-1] for row in rows)


def test_the_check_fails_when_the_model_and_the_table_disagree() -> None:
    stale = README.read_text().replace("| `dry_run` | `bool` | `false` |", "| `dry_run` | `bool` | `true` |")
    assert stale != README.read_text()
    assert options_table.rewritten(stale) != stale


def test_a_fields_comment_is_its_description() -> None:
    source = """
class Options:
    # first line of the comment,
    # second line
    a: int = 1
    b: int = 2
"""
    assert options_table.field_comments(source) == {"a": "first line of the comment, second line", "b": ""}


def test_the_readme_prefix_maps_example_is_a_valid_target() -> None:
    section = README.read_text().split("- **`prefix_maps`**", 1)[1].split("- **`lake_formation`**", 1)[0]
    (example,) = re.findall(r"```json\n(.*?)```", section, flags=re.S)
    maps = json.loads(example)["target"]["prefix_maps"]
    request = MigrationRequest.model_validate(
        {
            "run_id": "r",
            "source": {"account_id": "111111111111"},
            "target": {"account_id": "222222222222", "bucket": "target-lake", "prefix_maps": maps},
            "selection": {"databases": ["sales"]},
        }
    )
    assert [(m.source, m.target) for m in request.target.prefix_maps] == [
        (m["source"], m["target"]) for m in maps
    ]
