"""Where a request's assessment is priced, checked when the request is parsed: the region (the
target's, else the workflow's own) and, for a region no price table ships for, the request's own
table (options.prices, an S3 URI). Below the assessment, which reads the tables themselves
(icelake/assess/estimate/prices.py); the regions that ship are icelake.constants.PRICED_REGIONS,
those with S3 Tables prices S3TABLES_PRICED_REGIONS."""

from __future__ import annotations

import os
import re

from icelake.constants import DEFAULT_PRICE_REGION, PRICED_REGIONS

_S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+$")
# The shipped tables with S3 Tables prices (their `s3tables` section): AWS's were found for these.
S3TABLES_PRICED_REGIONS = ("us-east-1", "us-west-2")


def price_region(target_region: str | None) -> str:
    """The region an assessment prices: the target's, else the workflow's own (AWS_REGION)."""
    return (
        target_region
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or DEFAULT_PRICE_REGION
    )


def check_prices_uri(uri: str | None) -> str | None:
    """options.prices: an S3 URI of a price table, or None."""
    if uri is not None and not _S3_URI.match(uri):
        raise ValueError(
            f"prices {uri!r} is not an S3 URI of a price table: give one such as "
            "'s3://icelake-artifacts-123456789012/prices/ap-south-1.json'"
        )
    return uri


def check_priced(mode: str, region: str, prices: str | None, target_kind: str = "glue") -> None:
    """An assessment of a region no price table ships for (or, into a table bucket, none with S3
    Tables prices) is refused when the request is parsed, naming the option that fixes it, never in
    the middle of a run."""
    if mode != "assess" or prices is not None:
        return
    if region not in PRICED_REGIONS:
        raise ValueError(
            f"options.prices: no price table ships for {region} (there are: {', '.join(PRICED_REGIONS)}): "
            f"give options.prices, the S3 URI of a price table for {region} in the shipped format "
            "(icelake/assess/estimate/price_tables/us-east-1.json)"
        )
    if target_kind == "s3tables" and region not in S3TABLES_PRICED_REGIONS:
        raise ValueError(
            f"options.prices: the price table shipped for {region} has no S3 Tables prices (they ship for "
            f"{', '.join(S3TABLES_PRICED_REGIONS)}): give options.prices, the S3 URI of a price table "
            f"for {region} with an 's3tables' section (icelake/assess/estimate/price_tables/us-east-1.json)"
        )
