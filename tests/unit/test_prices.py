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


def test_s3tables_prices_ship_dated_and_sourced_where_aws_publishes_them_found() -> None:
    from icelake.request.pricing import S3TABLES_PRICED_REGIONS

    with_tables = [r for r in shipped_regions() if load_prices(r).s3tables is not None]
    assert with_tables == list(S3TABLES_PRICED_REGIONS) == ["us-east-1", "us-west-2"]
    for region in with_tables:
        section = load_prices(region).tables_prices()
        assert date(2025, 1, 1) <= section.as_of <= date.today()
        for name, price in section:
            if name != "as_of" and price is not None:
                assert price.source.startswith(
                    "https://aws.amazon.com/s3/pricing/ Storage & requests, S3 Tables"
                )
    # none found for Europe (Ireland): asking for them names the fix
    with pytest.raises(PriceTableError, match=r"no S3 Tables prices .* give options\.prices"):
        load_prices("eu-west-1").tables_prices()


def test_s3tables_costs_reproduce_the_pricing_pages_worked_example() -> None:
    """AWS's 'S3 Tables pricing example': a 1 TB table of 100 MB objects, 30,090 PUTs and 500,000
    GETs in a month, and compaction of 30,000 new 5 MB files: $27.14 of storage, $0.26 of
    monitoring, $0.15 and $0.20 of requests, $0.06 and $0.73 of compaction."""
    table = load_prices("us-west-2")
    objects = round(1024 * 1024 / 100)  # 10,486
    assert table.storage_usd(1024**4, 30, objects=objects, s3tables=True) == pytest.approx(
        27.14 + 0.26, abs=0.01
    )
    assert table.s3_requests_usd({"put": 30_090}, s3tables=True) == pytest.approx(0.15, abs=0.005)
    assert table.s3_requests_usd({"get": 500_000}, s3tables=True) == pytest.approx(0.20)
    assert table.compaction_usd(30_000, 30_000 * 5 * 1024**2) == pytest.approx(0.06 + 0.73, abs=0.005)
    # the sort rate is not in the example: us-west-2 has none, us-east-1 has the page's $0.01
    with pytest.raises(PriceTableError, match="no S3 Tables price for sort or z-order"):
        table.compaction_usd(1, 1024**3, sort=True)
    assert load_prices("us-east-1").compaction_usd(0, 1024**3, sort=True) == pytest.approx(0.01)
    # a Glue target's storage stays S3 Standard's
    assert table.storage_usd(1024**3, 30) == pytest.approx(0.023)


def test_an_s3tables_price_of_another_rate_is_taken_from_an_override(tmp_path: Path) -> None:
    mine = json.loads((TABLES / "us-east-1.json").read_text())
    mine["s3tables"]["request_tier1_per_1000"]["usd"] = 0.006
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(mine))
    table = load_prices("us-east-1", path)
    # the writes into the table bucket at its rate, the rest at S3's
    assert table.s3_requests_usd({"put": 1000, "get": 1000}, s3tables=True) == pytest.approx(0.006 + 0.0004)
    assert table.s3_requests_usd({"put": 1000, "get": 1000}) == pytest.approx(0.005 + 0.0004)


def test_an_assessment_into_a_table_bucket_without_s3tables_prices_is_refused_at_parse() -> None:
    from icelake.errors import InvalidRequestError
    from icelake.request.selection import parse_request

    example = json.loads((ROOT / "tests" / "events" / "migrate_request_s3tables.json").read_text())
    request = {**example, "run_id": "r", "mode": "assess"}
    assert parse_request(request).price_region == "us-east-1"  # priced: the bucket's region ships them
    arn = "arn:aws:s3tables:eu-west-1:222222222222:bucket/lake"
    ireland = {**request, "target": {**request["target"], "table_bucket_arn": arn}}
    with pytest.raises(
        InvalidRequestError, match=r"options\.prices: the price table shipped for eu-west-1 has no S3"
    ):
        parse_request(ireland)
    uri = "s3://icelake-artifacts-123456789012/prices/eu-west-1.json"
    assert parse_request({**ireland, "options": {"prices": uri}}).options.prices == uri
    # a Glue target there needs none: its table ships
    glue = {
        **request,
        "target": {"account_id": "222222222222", "bucket": "target-lake", "region": "eu-west-1"},
    }
    assert parse_request(glue).price_region == "eu-west-1"
