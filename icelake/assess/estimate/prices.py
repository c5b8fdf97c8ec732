"""AWS list prices an estimate and a run's own accounting are priced with.

One dated JSON table per region ships beside this module (``price_tables/<region>.json``); each
price names the AWS pricing page and line it comes from. ``load_prices(region)`` reads the shipped
table, ``load_prices(region, override=path)`` a table of the same schema (negotiated or newer
prices: ``--prices FILE``). The public API is ``load_prices``, ``PriceTable`` and its cost methods,
``REQUEST_KINDS`` and ``shipped_regions``; it is kept stable for every caller that prices work.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from icelake.aws.request_count import REQUEST_KINDS
from icelake.errors import PriceTableError

__all__ = ["REQUEST_KINDS", "PriceTable", "load_prices", "price_table_of", "shipped_regions"]

# The price class S3 bills each request kind icelake counts (`REQUEST_KINDS`, a run's outcome and an
# estimate alike) in: COPY (CopyObject, UploadPartCopy), PUT/POST and LIST are tier 1; GET and HEAD
# tier 2; DELETE (DeleteObject, DeleteObjects) is free.
_TIER: dict[str, Literal["tier1", "tier2", "delete"]] = {
    "copy": "tier1",
    "list": "tier1",
    "put": "tier1",
    "head": "tier2",
    "get": "tier2",
    "delete": "delete",
}
_GIB = 1024**3
_PACKAGE_DIR = "price_tables"


class _Frozen(BaseModel):
    """A price table's parts: read as written, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Price(_Frozen):
    """A price in USD and where it comes from (the AWS pricing page and the line on it)."""

    usd: float = Field(ge=0)
    source: str = Field(min_length=1)


class Prices(_Frozen):
    s3_request_tier1_per_1000: Price
    s3_request_tier2_per_1000: Price
    s3_request_delete_per_1000: Price
    s3_storage_gb_month: Price
    lambda_gb_second: Price
    lambda_request: Price
    glue_dpu_hour: Price
    step_functions_transition: Price
    transfer_inter_region_gb: Price


class S3TablesPrices(_Frozen):
    """S3 Tables (a table bucket's tables, `target.kind: s3tables`): its own storage rate, the
    same request classes as S3 (PUT, POST, LIST; GET and all others), a monthly fee per object
    monitored, and compaction by objects and bytes processed. A region whose shipped table has none
    prices an S3 Tables target only with `options.prices` (icelake/request/pricing.py)."""

    as_of: date  # when these lines were read (the table's own as_of may be older)
    storage_gb_month: Price
    request_tier1_per_1000: Price
    request_tier2_per_1000: Price
    monitoring_per_1000_objects_month: Price
    compaction_per_1000_objects: Price
    compaction_binpack_gb: Price  # the default strategy
    compaction_sort_gb: Price | None = None  # sort or z-order; None: not published for the region


class MinimumRule(_Frozen):
    value: float = Field(ge=0)
    source: str = Field(min_length=1)


class WorkerDpuRule(_Frozen):
    value: dict[str, float]
    source: str = Field(min_length=1)


class Billing(_Frozen):
    glue_min_billed_s: MinimumRule
    glue_dpu_per_worker: WorkerDpuRule


class PriceTable(_Frozen):
    """One region's prices, dated, with the cost of each kind of work icelake does."""

    schema_version: Literal[1]
    region: str
    currency: Literal["USD"]
    as_of: date
    note: str
    prices: Prices
    billing: Billing
    s3tables: S3TablesPrices | None = None  # None: not published for this region when compiled

    def s3_requests_usd(self, requests: Mapping[str, int], *, s3tables: bool = False) -> float:
        """What S3 bills for these requests, keyed by ``REQUEST_KINDS``. Into a table bucket
        (`s3tables`), the writes are the table storage's, at S3 Tables' PUT rate; the reads are
        priced at S3's (the source's, mostly; S3 Tables' GET rate where it is the same)."""
        per_1000 = {
            "tier1": self.prices.s3_request_tier1_per_1000.usd,
            "tier2": self.prices.s3_request_tier2_per_1000.usd,
            "delete": self.prices.s3_request_delete_per_1000.usd,
        }
        unknown = set(requests) - set(_TIER)
        if unknown:
            raise ValueError(f"unknown S3 request kind(s) {sorted(unknown)}; expected {REQUEST_KINDS}")
        usd = sum(count * per_1000[_TIER[kind]] / 1000 for kind, count in requests.items())
        if s3tables:
            put_rate = self.tables_prices().request_tier1_per_1000.usd
            usd += requests.get("put", 0) * (put_rate - per_1000["tier1"]) / 1000
        return usd

    def lambda_usd(self, memory_mb: int, seconds: float, invocations: int) -> float:
        """Duration (GB-seconds at the function's memory) plus requests."""
        gb_seconds = memory_mb / 1024 * seconds
        return gb_seconds * self.prices.lambda_gb_second.usd + invocations * self.prices.lambda_request.usd

    def glue_usd(self, workers: int, worker_type: str, seconds: float) -> float:
        """A Glue Spark job run: its DPUs for its duration, at least the minimum billed time."""
        dpu_per_worker = self.billing.glue_dpu_per_worker.value
        if worker_type not in dpu_per_worker:
            raise PriceTableError(
                f"the price table for {self.region} has no DPU figure for Glue worker type "
                f"{worker_type!r} (it knows {sorted(dpu_per_worker)}); add it to a --prices table"
            )
        billed_s = max(seconds, self.billing.glue_min_billed_s.value)
        return workers * dpu_per_worker[worker_type] * billed_s / 3600 * self.prices.glue_dpu_hour.usd

    def step_functions_usd(self, transitions: int) -> float:
        return transitions * self.prices.step_functions_transition.usd

    def transfer_usd(self, bytes_moved: int) -> float:
        """Inter-region transfer of these bytes (priced at this table's rate out to other regions)."""
        return bytes_moved / _GIB * self.prices.transfer_inter_region_gb.usd

    def storage_usd(
        self, bytes_stored: int, days: float, *, objects: int = 0, s3tables: bool = False
    ) -> float:
        """Storage of these bytes for this many days (a month of 30 days): S3 Standard's, or a
        table bucket's with its monitoring fee for `objects` (`s3tables`)."""
        if not s3tables:
            return bytes_stored / _GIB * days / 30 * self.prices.s3_storage_gb_month.usd
        tables = self.tables_prices()
        per_month = bytes_stored / _GIB * tables.storage_gb_month.usd
        per_month += objects / 1000 * tables.monitoring_per_1000_objects_month.usd
        return per_month * days / 30

    def tables_prices(self) -> S3TablesPrices:
        """The S3 Tables prices, or PriceTableError naming the fix where the table has none."""
        if self.s3tables is None:
            raise PriceTableError(
                f"the price table for {self.region} has no S3 Tables prices (AWS's were not found for "
                "this region when it was compiled): give options.prices (or --prices FILE), a table "
                "with an 's3tables' section as icelake/assess/estimate/price_tables/us-east-1.json has"
            )
        return self.s3tables

    def compaction_usd(self, objects: int, bytes_processed: int, *, sort: bool = False) -> float:
        """S3 Tables compaction of these objects and bytes (binpack, or sort / z-order)."""
        tables = self.tables_prices()
        rate = tables.compaction_sort_gb if sort else tables.compaction_binpack_gb
        if rate is None:
            raise PriceTableError(
                f"the price table for {self.region} has no S3 Tables price for sort or z-order "
                "compaction: give options.prices (or --prices FILE) with s3tables.compaction_sort_gb"
            )
        return objects / 1000 * tables.compaction_per_1000_objects.usd + bytes_processed / _GIB * rate.usd


def shipped_regions() -> list[str]:
    """The regions a price table ships for."""
    folder = resources.files(__package__).joinpath(_PACKAGE_DIR)
    return sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))


def load_prices(region: str, override: Path | None = None) -> PriceTable:
    """The price table of ``region``: the shipped one, or ``override`` (which must be for ``region``)."""
    if override is None:
        if region not in shipped_regions():
            raise PriceTableError(
                f"no price table ships for region {region!r} (there are: {', '.join(shipped_regions())}); "
                "pass --prices FILE with one of the same schema (copy icelake/assess/estimate/price_tables/"
                "us-east-1.json and set its prices)"
            )
        text = resources.files(__package__).joinpath(_PACKAGE_DIR, f"{region}.json").read_text()
        where = f"the shipped price table for {region}"
    else:
        try:
            text = override.read_text()
        except OSError as err:
            raise PriceTableError(
                f"cannot read the price table {override} ({err.strerror or err}); pass a readable JSON file"
            ) from err
        where = str(override)
    return price_table_of(region, text, where)


def price_table_of(region: str, text: str, where: str) -> PriceTable:
    """The price table `text` (read from `where`: a file, an S3 URI), which must be for `region`."""
    table = _parse(text, where)
    if table.region != region:
        raise PriceTableError(
            f"{where} is for region {table.region!r}, but the work it would price runs in {region!r}; "
            f"pass a price table whose 'region' is {region!r}"
        )
    return table


def _parse(text: str, where: str) -> PriceTable:
    try:
        return PriceTable.model_validate(json.loads(text))
    except json.JSONDecodeError as err:
        raise PriceTableError(f"{where} is not JSON ({err}); pass a price table file") from err
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise PriceTableError(
            f"{where} is not a price table: {field}: {first['msg']} ({err.error_count()} problem(s)); "
            "see icelake/assess/estimate/price_tables/us-east-1.json for the schema"
        ) from err
