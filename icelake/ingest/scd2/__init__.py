"""SCD2 merge of landed batches into an Iceberg table, as functions on a SparkSession.

Every batch becomes ONE Iceberg commit (a MERGE INTO) that closes the current version of changed
keys and inserts their new versions and the new keys, plus, for full loads, closes and flags the
keys the batch no longer has. The batch id and its as-of time are written into that commit's
snapshot summary; a batch found there is skipped, so re-running after a crash adds nothing.

Semantics (the reference implementation in tests/ingest/reference.py states them in plain Python):
- One row per key per batch: the latest by `order_by` (NULLs oldest), ties broken by batch order
  (later page, later record wins).
- A key changed when any tracked column differs NULL-safely (`<=>`): NULL -> value and value ->
  NULL are changes, NULL -> NULL is not.
- Versions are valid over [_valid_from, _valid_to): a batch fetched at T closes versions at T and
  opens new ones at T. Batches must be merged in fetch order (the pending listing is oldest first);
  an older batch that is not recorded is refused rather than rewriting history.
- Columns present in the table but absent from a batch are NULL for that batch's records.
- A refused, quarantined or failed batch changes nothing, schema included: everything that can
  refuse it is decided before the table is touched, and a MERGE that does not commit restores the
  schema its batch changed.

Modules, one concern each: `names` (bookkeeping columns, quoting), `schema` (DDL and schema
evolution), `batch` (a landed batch as a DataFrame), `log` (the commit log), `sql` (classification
and MERGE SQL), `merge` (one batch, one commit; the pending batches in order), `maintenance`.
"""

from icelake.ingest.scd2.batch import BatchFrame, batch_dataframe, batch_frame
from icelake.ingest.scd2.log import CommitLog, batch_commits, commit_log, with_commit_properties
from icelake.ingest.scd2.maintenance import compact, maintain
from icelake.ingest.scd2.merge import BatchInfo, merge_batch, merge_pending
from icelake.ingest.scd2.names import (
    BATCH_AS_OF_PROPERTY,
    BATCH_ID_PROPERTY,
    INGESTED_AT,
    IS_CURRENT,
    IS_DELETED,
    SCD2_COLUMNS,
    SOURCE_FILE,
    VALID_FROM,
    VALID_TO,
    q,
    qtable,
    ts_constant,
    ts_literal,
)
from icelake.ingest.scd2.schema import create_table_ddl, data_columns, table_exists

__all__ = [
    "BATCH_AS_OF_PROPERTY",
    "BATCH_ID_PROPERTY",
    "INGESTED_AT",
    "IS_CURRENT",
    "IS_DELETED",
    "SCD2_COLUMNS",
    "SOURCE_FILE",
    "VALID_FROM",
    "VALID_TO",
    "BatchFrame",
    "BatchInfo",
    "CommitLog",
    "batch_commits",
    "batch_dataframe",
    "batch_frame",
    "commit_log",
    "compact",
    "create_table_ddl",
    "data_columns",
    "maintain",
    "merge_batch",
    "merge_pending",
    "q",
    "qtable",
    "table_exists",
    "ts_constant",
    "ts_literal",
    "with_commit_properties",
]
