"""Local execution: Spark with the Iceberg runtime, and (later) embedded AWS."""
