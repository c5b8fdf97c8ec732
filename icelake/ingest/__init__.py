"""API ingestion: fetch an HTTP JSON API into a raw landing zone, merge batches into SCD2 Iceberg tables."""
