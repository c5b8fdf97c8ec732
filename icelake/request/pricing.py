"""Where a request's assessment is priced, checked when the request is parsed: the region (the
target's, else the workflow's own) and, for a region no price table ships for, the request's own
table (options.prices, an S3 URI). Below the assessment, which reads the tables themselves
(icelake/assess/estimate/prices.py); the regions that ship are icelake.constants.PRICED_REGIONS."""

from __future__ import annotations

import os
import re

from icelake.constants import DEFAULT_PRICE_REGION, PRICED_REGIONS

_S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+$")


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


def check_priced(mode: str, region: str, prices: str | None) -> None:
    """An assessment of a region no price table ships for is refused when the request is parsed,
    naming the option that fixes it, never in the middle of a run."""
    if mode == "assess" and prices is None and region not in PRICED_REGIONS:
        raise ValueError(
            f"options.prices: no price table ships for {region} (there are: {', '.join(PRICED_REGIONS)}): "
            f"give options.prices, the S3 URI of a price table for {region} in the shipped format "
            "(icelake/assess/estimate/price_tables/us-east-1.json)"
        )
