"""The price tables estimates and run accounting are priced with: every shipped table is complete,
dated and sourced; an override replaces it; a bad table is refused in one line."""

from __future__ import annotations

import json
import tomllib
from datetime import date
from pathlib import Path

import pytest

from icelake.assess.estimate import prices
from icelake.assess.estimate.prices import load_prices, shipped_regions
from icelake.errors import PriceTableError

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / "icelake" / "assess" / "estimate" / "price_tables"
PAGES = (
    "https://aws.amazon.com/s3/pricing/",
    "https://aws.amazon.com/lambda/pricing/",
    "https://aws.amazon.com/glue/pricing/",
    "https://aws.amazon.com/step-functions/pricing/",
)


def test_tables_ship_for_at_least_three_regions_with_a_source_for_every_price() -> None:
    regions = shipped_regions()
    assert {"us-east-1", "eu-west-1"} <= set(regions) and len(regions) >= 3
    for region in regions:
        table = load_prices(region)
        assert table.region == region and table.currency == "USD"
        assert date(2025, 1, 1) <= table.as_of <= date.today()
        for name, price in table.prices:
            assert price.source.startswith(PAGES), f"{region} {name}: {price.source}"
        assert table.prices.transfer_inter_region_gb.usd > 0


def test_the_tables_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["icelake"]
    shipped = {p for pattern in globs for p in (ROOT / "icelake").glob(pattern)}
    assert set(TABLES.glob("*.json")) <= shipped and len(shipped) > 3


def test_costs_follow_the_published_prices() -> None:
    table = load_prices("us-east-1")
    # 1,000 copies + 1,000 lists at $0.005 per 1,000; 2,000 HEAD/GET at $0.0004; deletes are free.
    assert table.s3_requests_usd({"copy": 1000, "list": 1000, "head": 1000, "get": 1000, "delete": 9}) == (
        pytest.approx(0.0108)
    )
    # A 3,008 MB Lambda for 60 s: 176.25 GB-s at $0.0000166667, plus one request at $0.20 per million.
    assert table.lambda_usd(3008, 60, 1) == pytest.approx(3008 / 1024 * 60 * 0.0000166667 + 0.0000002)
    # Glue bills a minute at least: 10 G.1X workers for 30 s cost 10 DPU-minutes at $0.44 an hour.
    assert table.glue_usd(10, "G.1X", 30) == pytest.approx(10 * 0.44 / 60)
    assert table.glue_usd(2, "G.2X", 3600) == pytest.approx(4 * 0.44)
    assert table.step_functions_usd(1000) == pytest.approx(0.025)
    assert table.transfer_usd(10 * 1024**3) == pytest.approx(0.2)
    assert table.storage_usd(1024**3, 15) == pytest.approx(0.023 / 2)
    with pytest.raises(ValueError, match="unknown S3 request kind"):
        table.s3_requests_usd({"select": 1})
    assert set(prices.REQUEST_KINDS) == {"copy", "list", "head", "get", "put", "delete"}


def test_an_override_replaces_the_shipped_table(tmp_path: Path) -> None:
    mine = json.loads((TABLES / "eu-west-1.json").read_text())
    mine["prices"]["s3_request_tier1_per_1000"]["usd"] = 0.004
    mine["prices"]["s3_request_tier1_per_1000"]["source"] = "our enterprise agreement, 2026"
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(mine))
    assert load_prices("eu-west-1", path).s3_requests_usd({"copy": 1000}) == pytest.approx(0.004)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.update(region="us-east-1"), "is for region 'us-east-1', but the work it would price"),
        (lambda t: t["prices"].pop("glue_dpu_hour"), r"prices\.glue_dpu_hour: Field required"),
        (lambda t: t["prices"]["lambda_request"].update(usd=-1), r"prices\.lambda_request\.usd"),
        (lambda t: t["prices"]["lambda_request"].update(source=""), r"prices\.lambda_request\.source"),
    ],
)
def test_a_bad_table_is_refused_naming_what_is_wrong(tmp_path: Path, change: object, message: str) -> None:
    table = json.loads((TABLES / "eu-west-1.json").read_text())
    change(table)  # type: ignore[operator]
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(table))
    with pytest.raises(PriceTableError, match=message):
        load_prices("eu-west-1", path)


def test_missing_unreadable_and_unknown_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(PriceTableError, match=r"no price table ships for region 'mars-1'.*--prices FILE"):
        load_prices("mars-1")
    with pytest.raises(PriceTableError, match="cannot read the price table"):
        load_prices("us-east-1", tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(PriceTableError, match="is not JSON"):
        load_prices("us-east-1", tmp_path / "bad.json")
    with pytest.raises(PriceTableError, match=r"no DPU figure for Glue worker type 'Z\.9X'"):
        load_prices("us-east-1").glue_usd(1, "Z.9X", 60)


def test_the_request_knows_the_regions_a_table_ships_for() -> None:
    # the request layer (below the assessment) refuses an unpriced region by this list
    from icelake.constants import PRICED_REGIONS

    assert list(PRICED_REGIONS) == shipped_regions()


def test_an_assessment_of_an_unpriced_region_is_refused_at_parse_naming_options_prices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from icelake.errors import InvalidRequestError
    from icelake.request.selection import parse_request

    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    target = {"account_id": "222222222222", "bucket": "target-lake", "region": "sa-east-1"}
    request = {
        "run_id": "r",
        "source": {"account_id": "111111111111"},
        "target": target,
        "selection": {"databases": ["sales"]},
        "mode": "assess",
    }
    with pytest.raises(InvalidRequestError, match=r"options\.prices: no price table ships for sa-east-1"):
        parse_request(request)
    # with a price table named, or in a mode that prices nothing up front, it is taken
    uri = "s3://icelake-artifacts-123456789012/prices/sa-east-1.json"
    assert parse_request({**request, "options": {"prices": uri}}).options.prices == uri
    assert parse_request({**request, "mode": "full"}).price_region == "sa-east-1"
    # the workflow's own region when the target names none (AWS_REGION in a Lambda)
    monkeypatch.setenv("AWS_REGION", "ap-southeast-2")
    unnamed = {**request, "target": {k: v for k, v in target.items() if k != "region"}}
    with pytest.raises(InvalidRequestError, match="no price table ships for ap-southeast-2"):
        parse_request(unnamed)
    with pytest.raises(InvalidRequestError, match="is not an S3 URI of a price table"):
        parse_request({**request, "options": {"prices": "prices.json"}})


def test_a_table_read_from_anywhere_must_be_for_its_region() -> None:
    text = (TABLES / "us-east-1.json").read_text()
    assert prices.price_table_of("us-east-1", text, "s3://b/k").region == "us-east-1"
    with pytest.raises(PriceTableError, match="s3://b/k is for region 'us-east-1'"):
        prices.price_table_of("sa-east-1", text, "s3://b/k")
