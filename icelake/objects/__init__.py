"""Everything of a selected database besides its Iceberg tables (docs/design.md, "Views and other
objects"): each Glue catalog entry classified (kinds.py), views' SQL read and renamed with sqlglot
(sql.py; Athena's envelope: envelope.py), the plan of what is carried in which order (plan.py),
read from the catalogs (survey.py) and carried onto the target with its rollback (carry.py)."""
